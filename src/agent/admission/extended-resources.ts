/**
 * Extended resources (`example.com/dongle`: a name outside kubernetes.io/) in admission, as
 * upstream's predicate admit handler: a resource the node advertises (in the allocatable the
 * apiserver has: an operator PATCHes the Node's capacity and the kubelet copies it to
 * allocatable) is checked like cpu — requested plus what the admitted pods request, against
 * allocatable; one the node does not advertise is a cluster-level resource and is not checked
 * (upstream removeMissingExtendedResources). Huge pages (`hugepages-2Mi`) are checked the same
 * way against the node's own pools, always: a size the machine lacks has none to give. Pure.
 */
import type { Pod } from '../../api/types.js';
import { podQuantity } from './pod-quantity.js';
import { isHugePageResource, parseQuantity } from '../../api/quantity.js';

/** Upstream IsExtendedResourceName: not native (no `/`, or in kubernetes.io/) and not a `requests.` quota name. */
export function isExtendedResource(name: string): boolean {
  return name.includes('/') && !name.includes('kubernetes.io/') && !name.startsWith('requests.');
}

/**
 * The pod's effective request of `name` (upstream PodRequests): max(sum of containers and sidecars, largest init
 * container) + overhead.
 */
export function podRequestOf(pod: Pod, name: string): number {
  const overhead = parseQuantity((pod.spec.overhead as Record<string, string> | undefined)?.[name]) ?? 0;
  return podQuantity(pod.spec, (c) => parseQuantity(c.resources?.requests?.[name]) ?? 0, overhead);
}

/**
 * What the pod asks of an extended resource the node advertises (`extended`) or of huge pages
 * (`hugePages`, the node's pools in bytes) beyond what is left, in name order (empty: it fits).
 */
export function extendedShortfalls(
  pod: Pod,
  admitted: Pod[],
  extended: Readonly<Record<string, number>>,
  hugePages: Readonly<Record<string, number>> = {},
): { resource: string; requested: number; used: number; capacity: number }[] {
  const names = new Set(
    [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].flatMap((c) =>
      Object.keys(c.resources?.requests ?? {}),
    ),
  );
  const out = [];
  for (const resource of [...names].filter((n) => isExtendedResource(n) || isHugePageResource(n)).sort()) {
    const capacity = isHugePageResource(resource) ? (hugePages[resource] ?? 0) : extended[resource];
    const requested = podRequestOf(pod, resource);
    if (capacity === undefined || requested === 0) continue;
    const used = admitted.reduce((n, p) => n + podRequestOf(p, resource), 0);
    if (used + requested > capacity) out.push({ resource, requested, used, capacity });
  }
  return out;
}
