/**
 * The device manager as a topology hint provider (upstream devicemanager topology_hints.go and
 * filterByAffinity): a plugin may give each device the NUMA nodes it is attached to
 * (ListAndWatch `topology`); a container's request of N devices of a resource is hinted at every
 * set of NUMA nodes with N devices to give, preferred when as small as the request allows, and its
 * devices are then taken from the NUMA nodes the topology manager chose first. Pure.
 */
import { numaMasks, type ResourceHints, type TopologyHint } from '../topologymanager/hint-merge.js';

/** The NUMA nodes of each device of a resource; undefined for a device the plugin gave none. */
export type DeviceNumaNodes = ReadonlyMap<string, readonly number[] | undefined>;

/** Whether any device of the resource has NUMA nodes (upstream deviceHasTopologyAlignment). */
export const hasTopology = (devices: DeviceNumaNodes): boolean =>
  [...devices.values()].some((nodes) => nodes !== undefined);

const onAny = (nodes: readonly number[] | undefined, mask: readonly number[]) => !!nodes?.some((n) => mask.includes(n));

/**
 * Hints for `request` devices (upstream generateDeviceTopologyHints): every set of the machine's
 * NUMA nodes that holds all of `reusable` (those with NUMA nodes) and, with them, `request` of
 * `available`; preferred when no smaller set of NUMA nodes has `request` devices at all.
 */
export function deviceTopologyHints(
  numaNodes: readonly number[],
  devices: DeviceNumaNodes,
  available: readonly string[],
  reusable: readonly string[],
  request: number,
): TopologyHint[] {
  let minSize = numaNodes.length;
  const hints: TopologyHint[] = [];
  for (const mask of numaMasks(numaNodes)) {
    const inMask = [...devices.values()].filter((nodes) => onAny(nodes, mask)).length;
    if (inMask >= request && mask.length < minSize) minSize = mask.length;
    let matching = 0;
    let outside = false;
    for (const id of reusable) {
      const nodes = devices.get(id);
      if (nodes === undefined) continue;
      if (!onAny(nodes, mask)) outside = true;
      matching++;
    }
    if (outside) continue;
    matching += available.filter((id) => onAny(devices.get(id), mask)).length;
    if (matching >= request) hints.push({ numaNodes: mask, preferred: false });
  }
  return hints.map((h) => ({ ...h, preferred: h.numaNodes!.length === minSize }));
}

/**
 * A container's hints for one resource (upstream GetTopologyHints): none for a resource whose
 * devices have no NUMA nodes; those of the devices it already holds (a kubelet restart); an empty
 * list when too few devices are left.
 */
export function resourceHints(
  numaNodes: readonly number[],
  devices: DeviceNumaNodes,
  o: { request: number; held: readonly string[]; available: readonly string[]; reusable: readonly string[] },
): ResourceHints {
  if (!hasTopology(devices)) return undefined;
  if (o.held.length)
    return o.held.length === o.request ? deviceTopologyHints(numaNodes, devices, o.held, [], o.request) : [];
  if (new Set([...o.available, ...o.reusable]).size < o.request) return [];
  return deviceTopologyHints(numaNodes, devices, o.available, o.reusable, o.request);
}

/**
 * `available` split by the chosen NUMA nodes (upstream filterByAffinity): devices on them, on
 * other NUMA nodes, and without NUMA nodes; all of them "without" when there is no affinity or
 * the resource has no topology.
 */
export function byAffinity(
  available: readonly string[],
  devices: DeviceNumaNodes,
  affinity: readonly number[] | undefined,
): { aligned: string[]; unaligned: string[]; withoutTopology: string[] } {
  if (!affinity || !hasTopology(devices)) return { aligned: [], unaligned: [], withoutTopology: [...available] };
  const out = { aligned: [] as string[], unaligned: [] as string[], withoutTopology: [] as string[] };
  for (const id of available) {
    const nodes = devices.get(id);
    if (!nodes?.length) out.withoutTopology.push(id);
    else if (onAny(nodes, affinity)) out.aligned.push(id);
    else out.unaligned.push(id);
  }
  return out;
}

/**
 * The devices by the NUMA node they are on (upstream's DevicesPerNUMA, as the checkpoint keeps
 * them): `-1` for those without one; a device on several under each. Pure.
 */
export function byNumaNode(ids: readonly string[], devices: DeviceNumaNodes): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const id of ids) {
    const nodes = devices.get(id);
    for (const node of nodes?.length ? nodes : [-1]) (out[String(node)] ??= []).push(id);
  }
  return out;
}
