/**
 * `distribute-cpus-across-numa` (upstream takeByTopologyNUMADistributed, KEP 2902): a request
 * that one NUMA node cannot hold is spread evenly over the fewest NUMA nodes that can, instead of
 * filling them one after the other. For 1, 2, 3, … NUMA nodes, every combination that has room
 * for an even share of the CPUs (in groups of `groupSize`: whole cores with full-pcpus-only) is
 * tried; what does not divide evenly goes to a subset of them; the combination and subset chosen
 * leave the machine's NUMA nodes most balanced (the smallest standard deviation of their free
 * CPUs). When none can, the CPUs are packed as without the option. Pure.
 */
import { cpuSet, type CpuSet } from '../../lib/cpuset.js';
import { CpuAccumulator, takeByTopology, type Taken } from './cpu-assignment.js';
import type { CpuTopology } from './topology.js';

/** Calls `f` with every `k`-element subset of `n`, in order, until it returns false. */
function everyCombination(n: readonly number[], k: number, f: (combo: number[]) => boolean): void {
  const walk = (start: number, picked: number[]): boolean => {
    if (picked.length === k) return f(picked);
    for (let i = start; i <= n.length - (k - picked.length); i++) if (!walk(i + 1, [...picked, n[i]])) return false;
    return true;
  };
  if (k >= 1) walk(0, []);
}

function standardDeviation(values: readonly number[]): number {
  const mean = values.reduce((a, v) => a + v, 0) / values.length;
  return Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
}

/**
 * Hands `remainder` out in groups of `groupSize` round the NUMA nodes of `subset`, from the free
 * counts `free` (changed in place); false when they cannot take it all. (Upstream loops here until
 * it is handed out; a round that hands nothing out ends it.)
 */
function handOut(free: Map<number, number>, subset: readonly number[], remainder: number, groupSize: number): boolean {
  let rest = remainder;
  while (rest > 0) {
    const before = rest;
    for (const numa of subset) {
      if (rest === 0) break;
      if (free.get(numa)! < groupSize) continue;
      free.set(numa, free.get(numa)! - groupSize);
      rest -= groupSize;
    }
    if (rest === before) return false;
  }
  return true;
}

/** The fewest and most NUMA nodes that could hold the request (upstream rangeNUMANodesNeededToSatisfy). */
function numaNodesNeeded(acc: CpuAccumulator, numaNodes: number, available: number, groupSize: number) {
  const groups = Math.floor((acc.topo.size - 1) / groupSize) + 1;
  const groupsPerNuma = Math.floor((groups - 1) / numaNodes) + 1;
  const groupsNeeded = Math.floor((acc.needed - 1) / groupSize) + 1;
  return { min: Math.floor((groupsNeeded - 1) / groupsPerNuma) + 1, max: Math.min(groupsNeeded, available) };
}

/** `numCpus` CPUs out of `available` spread evenly over NUMA nodes, in groups of `groupSize`. */
export function takeDistributedAcrossNuma(
  topo: CpuTopology,
  available: CpuSet,
  numCpus: number,
  groupSize: number,
): Taken {
  if (numCpus % groupSize !== 0) return takeByTopology(topo, available, numCpus);
  const acc = new CpuAccumulator(topo, available, numCpus);
  if (acc.satisfied()) return { ok: true, cpus: [] };
  if (acc.failed()) return { ok: false, message: 'not enough cpus available to satisfy request' };
  const numas = acc.sortedNumaNodes();
  const freeIn = (numa: number) => acc.freeIn('numaNodeId', numa).length;
  const allNumaNodes = new Set([...topo.values()].map((c) => c.numaNodeId)).size;
  const { min, max } = numaNodesNeeded(acc, allNumaNodes, numas.length, groupSize);
  for (let k = min; k <= max; k++) {
    let best: { balance: number; combo: number[]; remainder: number[] } | undefined;
    everyCombination(numas, k, (combo) => {
      if (best?.balance === 0) return false;
      if (combo.reduce((n, numa) => n + freeIn(numa), 0) < numCpus) return true;
      const groups = combo.reduce((n, numa) => n + Math.floor(freeIn(numa) / groupSize), 0);
      if (groups * groupSize < numCpus) return true;
      const share = Math.floor(numCpus / combo.length / groupSize) * groupSize;
      if (combo.some((numa) => freeIn(numa) < share)) return true;
      const after = new Map(numas.map((numa) => [numa, freeIn(numa)]));
      for (const numa of combo) after.set(numa, after.get(numa)! - share);
      const remainder = numCpus - share * combo.length;
      const candidates = combo.filter((numa) => after.get(numa)! >= groupSize);
      let local = {
        balance: remainder === 0 ? standardDeviation([...after.values()]) : Infinity,
        subset: [] as number[],
      };
      // The remainder over as many of them as can take it, then fewer.
      for (let size = candidates.length; remainder > 0 && size >= 1; size--)
        everyCombination(candidates, size, (subset) => {
          const left = new Map(after);
          if (subset.reduce((n, numa) => n + left.get(numa)!, 0) < remainder) return true;
          if (!handOut(left, subset, remainder, groupSize)) return true;
          const balance = standardDeviation([...left.values()]);
          if (balance < local.balance) local = { balance, subset };
          return true;
        });
      if (local.balance < (best?.balance ?? Infinity))
        best = { balance: local.balance, combo, remainder: local.subset };
      return true;
    });
    if (!best) continue;
    const share = Math.floor(numCpus / best.combo.length / groupSize) * groupSize;
    for (const numa of best.combo) {
      const taken = takeByTopology(topo, acc.freeIn('numaNodeId', numa), share);
      if (taken.ok) acc.take(taken.cpus);
    }
    // The remainder as the balance was reckoned: a group at a time round the subset chosen.
    for (let rest = numCpus - share * best.combo.length, progress = true; rest > 0 && progress;) {
      progress = false;
      for (const numa of best.remainder) {
        if (rest === 0) break;
        if (freeIn(numa) < groupSize) continue;
        const taken = takeByTopology(topo, acc.freeIn('numaNodeId', numa), groupSize);
        if (!taken.ok) continue;
        acc.take(taken.cpus);
        rest -= groupSize;
        progress = true;
      }
    }
    if (acc.needed !== 0)
      return { ok: false, message: `accounting error, not enough CPUs allocated, remaining: ${acc.needed}` };
    return { ok: true, cpus: cpuSet(acc.result) };
  }
  return takeByTopology(topo, available, numCpus);
}
