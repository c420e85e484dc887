/**
 * Upstream's MachineInfo setter on the Node the apiserver has: capacity keeps what others put
 * there (an operator's `example.com/dongle`, advertised by PATCHing the Node's status, as the
 * "Advertise Extended Resources for a Node" task does) while the kubelet's own figures win for
 * what it measures, and allocatable follows capacity for those others' resources — the kubelet
 * reserves none of them; an extended resource gone from capacity leaves allocatable too. Huge pages are the kubelet's
 * alone: a size the node no longer has is dropped, as upstream's reconcileHugePageResource drops it when the kubelet
 * starts. Pure.
 */
import { parseQuantity } from '../../api/quantity.js';
import { isExtendedResource } from '../admission/extended-resources.js';

type Resources = Record<string, string>;

/** The prefix of the huge page resources (`hugepages-2Mi`), one per size of /sys/kernel/mm/hugepages. */
const HUGE_PAGES_PREFIX = 'hugepages-';

/**
 * The capacity and allocatable to report, given the apiserver's (`api`) and the kubelet's own (`mine`); `dropped` are
 * resources the kubelet advertised and no longer has (a device plugin gone for good: upstream's removed device plugins),
 * which are not kept from the apiserver's.
 */
export function withAdvertisedResources(
  api: { capacity?: unknown },
  mine: { capacity?: unknown; allocatable?: unknown },
  dropped: readonly string[] = [],
): { capacity: Resources; allocatable: Resources } {
  const kept = Object.entries((api.capacity ?? {}) as Resources).filter(
    ([name]) => !dropped.includes(name) && !name.startsWith(HUGE_PAGES_PREFIX),
  );
  const capacity: Resources = {
    ...Object.fromEntries(kept),
    ...(mine.capacity as Resources | undefined),
  };
  const allocatable: Resources = { ...(mine.allocatable as Resources | undefined) };
  for (const [k, v] of Object.entries(capacity)) if (!(k in allocatable)) allocatable[k] = v;
  return { capacity, allocatable };
}

/**
 * Whether two resource lists hold the same quantities, by value, as upstream's nodeStatusHasChanged compares them
 * (apiequality.Semantic): the apiserver stores each quantity in Go's canonical spelling, which may not be the one sent
 * ("4194304Ki" comes back "4Gi"). Pure.
 */
export function sameResources(a: unknown, b: unknown): boolean {
  const left = (a ?? {}) as Resources;
  const right = (b ?? {}) as Resources;
  const names = Object.keys(left);
  if (names.length !== Object.keys(right).length) return false;
  return names.every((name) => {
    if (!(name in right)) return false;
    if (left[name] === right[name]) return true;
    const value = parseQuantity(left[name]);
    return value !== undefined && value === parseQuantity(right[name]);
  });
}

/**
 * Upstream reconcileExtendedResource on an existing Node when the kubelet starts without a device checkpoint: each
 * extended resource in its capacity, zeroed in capacity and allocatable until its plugin says again what there is —
 * the status patch, or undefined when there is none to zero. Pure.
 */
export function zeroedExtendedResources(status: {
  capacity?: unknown;
}): { capacity: Resources; allocatable: Resources } | undefined {
  const names = Object.keys((status.capacity ?? {}) as Resources).filter(isExtendedResource);
  if (!names.length) return undefined;
  const zeros = Object.fromEntries(names.map((name) => [name, '0']));
  return { capacity: zeros, allocatable: { ...zeros } };
}
