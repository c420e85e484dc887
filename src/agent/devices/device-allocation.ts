/**
 * Which devices a container gets (upstream devicemanager devicesToAllocate): for N devices of a
 * resource (its limit of that extended resource), first those its pod's init containers held (they
 * ran before it, and upstream reuses them), then healthy devices no container holds — those on the
 * NUMA nodes the topology manager chose first, the plugin's preference among them when it offers
 * GetPreferredAllocation, then the rest in ID order. Pure.
 */
import type { Container, Pod } from '../../api/types.js';
import { byAffinity, type DeviceNumaNodes } from './device-topology.js';

export type DeviceHealth = 'Healthy' | 'Unhealthy' | 'Unknown';

/** One container's request of one device resource (its limit of that extended resource). */
export interface DeviceRequest {
  resource: string;
  count: number;
}

/** The container's requests of the resources plugins registered. */
export function containerDeviceRequests(c: Container, resources: ReadonlySet<string>): DeviceRequest[] {
  return Object.entries((c.resources?.limits ?? {}) as Record<string, string>)
    .filter(([name, value]) => resources.has(name) && Number(value) > 0)
    .map(([resource, value]) => ({ resource, count: Number(value) }));
}

/** Whether any container of the pod asks for a device. */
export const asksForDevices = (pod: Pod, resources: ReadonlySet<string>): boolean =>
  [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some(
    (c) => containerDeviceRequests(c, resources).length > 0,
  );

/**
 * The pod's request of each resource for the topology manager's pod scope (upstream
 * getPodDeviceRequest): the most any one init container asks for, or the sum of what the others
 * ask for (sidecars included), whichever is larger.
 */
export function podDeviceRequests(pod: Pod, resources: ReadonlySet<string>): Map<string, number> {
  const out = new Map<string, number>();
  const init = new Map<string, number>();
  for (const c of pod.spec.initContainers ?? [])
    for (const r of containerDeviceRequests(c, resources)) {
      if (c.restartPolicy === 'Always') out.set(r.resource, (out.get(r.resource) ?? 0) + r.count);
      else init.set(r.resource, Math.max(init.get(r.resource) ?? 0, r.count));
    }
  for (const r of pod.spec.containers.flatMap((c) => containerDeviceRequests(c, resources)))
    out.set(r.resource, (out.get(r.resource) ?? 0) + r.count);
  for (const [resource, n] of init) out.set(resource, Math.max(out.get(resource) ?? 0, n));
  return out;
}

/** How a container's devices of one resource are chosen (planDevices), before and after the plugin's preference. */
export type DevicePlan =
  | { shortfall: { requested: number; available: number } }
  | {
      /** Chosen already: devices reused, and those of the chosen NUMA nodes when more are needed. */
      ids: string[];
      /** What to ask the plugin's preference about, when devices are still to choose. */
      ask?: { available: string[]; mustInclude: string[]; size: number };
      /** The plugin's preference is taken among these… */
      preferFrom: string[];
      /** …then these, in order. */
      fallback: string[];
    };

/**
 * The first step of choosing `count` devices: `reusable` (an init container's, of this pod)
 * first, then from `available` (healthy, held by no container) split by `affinity`. When the
 * chosen NUMA nodes have more than enough, the preference is asked among them; otherwise all of
 * them are taken, and the preference is asked among every available device. Pure.
 */
export function planDevices(
  count: number,
  reusable: readonly string[],
  available: readonly string[],
  numa: DeviceNumaNodes,
  affinity: readonly number[] | undefined,
): DevicePlan {
  const ids = [...reusable].sort().slice(0, count);
  const needed = count - ids.length;
  if (!needed) return { ids, preferFrom: [], fallback: [] };
  const free = [...available].filter((id) => !ids.includes(id)).sort();
  if (free.length < needed) return { shortfall: { requested: needed, available: free.length } };
  const split = byAffinity(free, numa, affinity);
  if (needed < split.aligned.length)
    return {
      ids,
      ask: { available: [...ids, ...split.aligned], mustInclude: ids, size: count },
      preferFrom: split.aligned,
      fallback: split.aligned,
    };
  const taken = [...ids, ...split.aligned];
  if (taken.length === count) return { ids: taken, preferFrom: [], fallback: [] };
  return {
    ids: taken,
    ask: { available: [...taken, ...split.unaligned, ...split.withoutTopology], mustInclude: taken, size: count },
    preferFrom: [...split.unaligned, ...split.withoutTopology],
    fallback: [...split.unaligned, ...split.withoutTopology],
  };
}

/** The devices of a plan once the plugin's `preferred` ones are known (none when it offers no preference). Pure. */
export function finishDevices(
  plan: Exclude<DevicePlan, { shortfall: unknown }>,
  count: number,
  preferred: readonly string[],
): string[] {
  const ids = [...plan.ids];
  for (const id of [...preferred.filter((p) => plan.preferFrom.includes(p)), ...plan.fallback]) {
    if (ids.length === count) break;
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}
