/**
 * The topology manager's hints and their merge (upstream topologymanager policy.go, the
 * best-effort / restricted / single-numa-node policies, and the CPU manager's
 * generateCPUTopologyHints), with the CPU manager as the one hint provider. A hint is a set of
 * NUMA nodes (undefined: any) and whether it is preferred: the fewest NUMA nodes that could hold
 * the request. Pure.
 */
import type { CpuSet } from '../../lib/cpuset.js';
import type { CpuTopology } from './topology.js';

export interface TopologyHint {
  /** NUMA node IDs, ascending; undefined: no preference. */
  numaNodes?: readonly number[];
  preferred: boolean;
}

export type TopologyPolicy = 'none' | 'best-effort' | 'restricted' | 'single-numa-node';

/**
 * Every non-empty set of `nodes`, smallest first, each size in lexicographic order (upstream bitmask.IterateBitMasks).
 */
export function numaMasks(nodes: readonly number[]): number[][] {
  const out: number[][] = [];
  const pick = (start: number, size: number, acc: number[]) => {
    if (acc.length === size) return void out.push([...acc]);
    for (let i = start; i < nodes.length; i++) pick(i + 1, size, [...acc, nodes[i]]);
  };
  for (let size = 1; size <= nodes.length; size++) pick(0, size, []);
  return out;
}

/** The NUMA nodes of the machine, ascending. */
export const numaNodesOf = (topo: CpuTopology): number[] =>
  [...new Set([...topo.values()].map((c) => c.numaNodeId))].sort((a, b) => a - b);

/**
 * The CPU manager's hints for `request` exclusive CPUs (upstream generateCPUTopologyHints): every
 * set of NUMA nodes holding enough of `available` (plus all of `reusable`), preferred when it is as
 * small as the smallest set that could hold the request on this machine.
 */
export function cpuTopologyHints(
  topo: CpuTopology,
  available: CpuSet,
  reusable: CpuSet,
  request: number,
): TopologyHint[] {
  const nodes = numaNodesOf(topo);
  const numa = (cpu: number) => topo.get(cpu)?.numaNodeId;
  let minSize = nodes.length;
  const hints: TopologyHint[] = [];
  for (const mask of numaMasks(nodes)) {
    const inMask = (cpu: number) => mask.includes(numa(cpu) ?? -1);
    if ([...topo.keys()].filter(inMask).length >= request && mask.length < minSize) minSize = mask.length;
    if (!reusable.every(inMask)) continue;
    if (reusable.length + available.filter(inMask).length < request) continue;
    hints.push({ numaNodes: mask, preferred: false });
  }
  return hints.map((h) => ({ ...h, preferred: h.numaNodes!.length === minSize }));
}

/** a narrower than b: fewer nodes, or as many and lower ones (upstream IsNarrowerThan). */
function narrower(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return a.length < b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
}

/**
 * The best hint of one provider's `hints` under `policy`, and whether the pod is admitted
 * (upstream Merge + canAdmitPodResult): undefined hints mean no preference (any NUMA node,
 * preferred); an empty list, no way to satisfy it. single-numa-node keeps only single-node
 * preferred hints and no-preference ones; restricted and single-numa-node admit only a preferred
 * best hint; best-effort always admits.
 */
export function mergeHints(
  policy: Exclude<TopologyPolicy, 'none'>,
  allNodes: readonly number[],
  hints: readonly TopologyHint[] | undefined,
): { hint: TopologyHint; admit: boolean } {
  let candidates: TopologyHint[] =
    hints === undefined ? [{ preferred: true }] : hints.length ? [...hints] : [{ preferred: false }];
  if (policy === 'single-numa-node')
    candidates = candidates.filter((h) => h.preferred && (h.numaNodes === undefined || h.numaNodes.length === 1));
  let best: { nodes: readonly number[]; preferred: boolean } | undefined;
  for (const h of candidates) {
    const nodes = h.numaNodes ?? allNodes;
    if (!nodes.length) continue;
    if (!best || (h.preferred && !best.preferred) || (h.preferred === best.preferred && narrower(nodes, best.nodes)))
      best = { nodes, preferred: h.preferred };
  }
  const result = best ?? { nodes: allNodes, preferred: false };
  // single-numa-node: the whole machine means no affinity.
  const any =
    policy === 'single-numa-node' &&
    result.nodes.length === allNodes.length &&
    result.nodes.every((n, i) => n === allNodes[i]);
  const hint: TopologyHint = any
    ? { preferred: result.preferred }
    : { numaNodes: result.nodes, preferred: result.preferred };
  return { hint, admit: policy === 'best-effort' || hint.preferred };
}
