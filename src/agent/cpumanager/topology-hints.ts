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
 * Whether the NUMA nodes of `mask` span no more sockets than the fewest a request of
 * `minAffinitySize` NUMA nodes needs (upstream isHintSocketAligned).
 */
function socketAligned(topo: CpuTopology, mask: readonly number[], minAffinitySize: number): boolean {
  const cpus = [...topo.values()];
  const sockets = new Set(cpus.map((c) => c.socketId)).size;
  const nodesPerSocket = Math.floor(numaNodesOf(topo).length / sockets);
  if (nodesPerSocket === 0) return false;
  const minSockets = Math.ceil(minAffinitySize / nodesPerSocket);
  return new Set(cpus.filter((c) => mask.includes(c.numaNodeId)).map((c) => c.socketId)).size === minSockets;
}

/**
 * The CPU manager's hints for `request` exclusive CPUs (upstream generateCPUTopologyHints): every
 * set of NUMA nodes holding enough of `available` (plus all of `reusable`), preferred when it is as
 * small as the smallest set that could hold the request on this machine — or, with align-by-socket,
 * when it spans as few sockets as that smallest set needs.
 */
export function cpuTopologyHints(
  topo: CpuTopology,
  available: CpuSet,
  reusable: CpuSet,
  request: number,
  alignBySocket = false,
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
  return hints.map((h) => ({
    ...h,
    preferred: (alignBySocket && socketAligned(topo, h.numaNodes!, minSize)) || h.numaNodes!.length === minSize,
  }));
}
