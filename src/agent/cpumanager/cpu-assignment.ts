/**
 * Which CPUs an exclusive allocation takes (upstream cpu_assignment.go takeByTopologyNUMAPacked,
 * without policy options): whole NUMA nodes or sockets first when the request needs at least one
 * (the larger unit first: NUMA nodes when a socket holds several, else sockets), then whole cores,
 * then single CPUs — each time from the NUMA node / socket with the fewest CPUs left (best fit),
 * and among cores from those with the fewest CPUs left, lowest IDs on ties. Pure.
 */
import { cpuSet, difference, type CpuSet } from '../../lib/cpuset.js';
import type { CpuTopology } from './topology.js';

type Level = 'socketId' | 'numaNodeId' | 'coreId';

/** Upstream's refusal when the available CPUs are too few. */
export const notEnoughCpus = (requested: number, available: number) =>
  `not enough cpus available to satisfy request: requested=${requested}, available=${available}`;

/** The CPUs of `topo` at `level` = `id`, among `cpus`. */
const cpusIn = (topo: CpuTopology, cpus: CpuSet, level: Level, id: number) =>
  cpus.filter((c) => topo.get(c)![level] === id);
const ids = (topo: CpuTopology, cpus: CpuSet, level: Level) => cpuSet(cpus.map((c) => topo.get(c)![level]));

/** `numCpus` CPUs out of `available`, or upstream's error message. */
export function takeByTopology(
  topo: CpuTopology,
  available: CpuSet,
  numCpus: number,
): { ok: true; cpus: CpuSet } | { ok: false; message: string } {
  const all = cpuSet(topo.keys());
  let free: CpuSet = available.filter((c) => topo.has(c));
  const result: number[] = [];
  if (numCpus < 1) return { ok: true, cpus: [] };
  if (numCpus > free.length) return { ok: false, message: notEnoughCpus(numCpus, available.length) };
  const take = (cpus: CpuSet) => {
    result.push(...cpus);
    free = difference(free, cpus);
  };
  const need = () => numCpus - result.length;
  const size = (level: Level, id: number) => cpusIn(topo, all, level, id).length;
  // Units of `level` ordered best-fit: fewest free CPUs first, then ID.
  const sorted = (level: Level, within: CpuSet) =>
    [...ids(topo, within, level)].sort(
      (a, b) => cpusIn(topo, free, level, a).length - cpusIn(topo, free, level, b).length || a - b,
    );
  // 1. Whole NUMA nodes / sockets, the larger first.
  const numaNodes = ids(topo, all, 'numaNodeId').length;
  const sockets = ids(topo, all, 'socketId').length;
  const levels: Level[] = numaNodes > sockets ? ['numaNodeId', 'socketId'] : ['socketId', 'numaNodeId'];
  for (const level of levels)
    for (const id of ids(topo, free, level)) {
      const unit = cpusIn(topo, free, level, id);
      if (unit.length === size(level, id) && need() >= unit.length) take(unit);
      if (need() < 1) return { ok: true, cpus: cpuSet(result) };
    }
  // The cores in best-fit order: by their NUMA node / socket's fewest free CPUs, then the core's.
  const orderedCores = (): number[] => {
    const outer = levels[0];
    return sorted(outer, free).flatMap((u) => sorted('coreId', cpusIn(topo, free, outer, u)));
  };
  // 2. Whole cores.
  const perCore = Math.round(all.length / ids(topo, all, 'coreId').length);
  for (const core of orderedCores()) {
    const cpus = cpusIn(topo, free, 'coreId', core);
    if (cpus.length === size('coreId', core) && need() >= perCore) take(cpus);
    if (need() < 1) return { ok: true, cpus: cpuSet(result) };
  }
  // 3. Single CPUs, partly used cores first.
  for (const core of orderedCores())
    for (const cpu of cpusIn(topo, free, 'coreId', core)) {
      if (need() >= 1) take([cpu]);
      if (need() < 1) return { ok: true, cpus: cpuSet(result) };
    }
  return { ok: false, message: 'failed to allocate cpus' };
}
