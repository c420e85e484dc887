/**
 * Which devices a pod's containers get (upstream devicemanager devicesToAllocate, without
 * topology): each container that asks for N devices of a resource (its limit of that extended
 * resource) gets N healthy devices that no other pod holds — first those its plugin prefers
 * (GetPreferredAllocation), then in ID order; an init container's devices are given to the
 * regular containers after it, as upstream reuses them (before any preference). Pure.
 */
import type { Pod } from '../../api/types.js';

export type DeviceHealth = 'Healthy' | 'Unhealthy' | 'Unknown';

/** One container's request of one device resource. */
export interface DeviceRequest {
  container: string;
  init: boolean;
  resource: string;
  count: number;
}

/** The device requests of the pod's containers, for the resources plugins registered. */
export function deviceRequests(pod: Pod, resources: ReadonlySet<string>): DeviceRequest[] {
  const of = (init: boolean) => (c: Pod['spec']['containers'][number]) =>
    Object.entries((c.resources?.limits ?? {}) as Record<string, string>)
      .filter(([name, value]) => resources.has(name) && Number(value) > 0)
      .map(([resource, value]) => ({ container: c.name, init, resource, count: Number(value) }));
  return [...(pod.spec.initContainers ?? []).flatMap(of(true)), ...pod.spec.containers.flatMap(of(false))];
}

/**
 * The devices each container gets, or the first resource that has too few: what was requested
 * and how many healthy devices are free.
 */
export function chooseDevices(
  requests: readonly DeviceRequest[],
  devicesOf: (resource: string) => ReadonlyMap<string, DeviceHealth>,
  heldOf: (resource: string) => ReadonlySet<string>,
  preferredOf: (container: string, resource: string) => readonly string[] = () => [],
):
  | { byContainer: Map<string, Map<string, string[]>> }
  | { shortfall: { resource: string; requested: number; available: number } } {
  const byContainer = new Map<string, Map<string, string[]>>();
  /** Devices given to init containers (which run one at a time): the regular containers take them first. */
  const fromInit = new Map<string, string[]>();
  /** Devices the regular containers took: each is one container's. */
  const taken = new Map<string, Set<string>>();
  for (const r of requests) {
    const held = heldOf(r.resource);
    const free = [...devicesOf(r.resource)]
      .filter(([id, health]) => health === 'Healthy' && !held.has(id))
      .map(([id]) => id)
      .sort();
    const preferred = preferredOf(r.container, r.resource).filter((id) => free.includes(id));
    const healthy = [...preferred, ...free.filter((id) => !preferred.includes(id))];
    const used = taken.get(r.resource) ?? new Set<string>();
    const reused = fromInit.get(r.resource) ?? [];
    const pool = r.init
      ? healthy
      : [...reused, ...healthy.filter((id) => !reused.includes(id))].filter((id) => !used.has(id));
    if (pool.length < r.count)
      return { shortfall: { resource: r.resource, requested: r.count, available: pool.length } };
    const ids = pool.slice(0, r.count);
    byContainer.set(r.container, (byContainer.get(r.container) ?? new Map<string, string[]>()).set(r.resource, ids));
    if (r.init) fromInit.set(r.resource, [...new Set([...reused, ...ids])]);
    else taken.set(r.resource, new Set([...used, ...ids]));
  }
  return { byContainer };
}
