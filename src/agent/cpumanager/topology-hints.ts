/**
 * The CPU manager's topology hints (upstream generateCPUTopologyHints): the sets of NUMA nodes
 * with room for a container's exclusive CPUs, preferred when as small as the request allows
 * (topologymanager/hint-merge.ts merges them with the other providers'). Pure.
 */
import type { CpuSet } from '../../lib/cpuset.js';
import { numaMasks, type TopologyHint } from '../topologymanager/hint-merge.js';
import type { CpuTopology } from './topology.js';

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
