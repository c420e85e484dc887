/**
 * Which CPUs an exclusive allocation takes (upstream cpu_assignment.go's cpuAccumulator and
 * takeByTopologyNUMAPacked): whole units of the larger of NUMA node and socket first, then of the
 * smaller, when the request needs at least one; then whole cores; then single CPUs. Each time the
 * units are walked best-fit, fewest free CPUs first (lowest ID on ties), one larger unit at a
 * time: with NUMA nodes that hold sockets (as many sockets as NUMA nodes or more), the NUMA nodes,
 * the sockets in each, the cores in each socket; with sockets that hold several NUMA nodes (sub-NUMA
 * clustering), the sockets, the NUMA nodes in each, the cores in each NUMA node. Pure.
 */
import { cpuSet, type CpuSet } from '../../lib/cpuset.js';
import type { CpuTopology } from './topology.js';

export type Level = 'socketId' | 'numaNodeId' | 'coreId';

/** Upstream's refusal when the available CPUs are too few. */
export const notEnoughCpus = (requested: number, available: number) =>
  `not enough cpus available to satisfy request: requested=${requested}, available=${available}`;

export type Taken = { ok: true; cpus: CpuSet } | { ok: false; message: string };

/** The CPUs taken so far toward `needed` more, and the available ones left (upstream's cpuAccumulator). */
export class CpuAccumulator {
  readonly result: number[] = [];
  needed: number;
  private readonly free: Set<number>;
  /** NUMA nodes are the larger unit: each holds one socket or more. */
  private readonly numaFirst: boolean;

  constructor(
    readonly topo: CpuTopology,
    available: CpuSet,
    numCpus: number,
  ) {
    this.free = new Set(available.filter((c) => topo.has(c)));
    this.needed = numCpus;
    this.numaFirst =
      this.unitsOf('socketId', [...topo.keys()]).length >= this.unitsOf('numaNodeId', [...topo.keys()]).length;
  }

  /** The available CPUs, ascending. */
  freeCpus(): number[] {
    return [...this.free].sort((a, b) => a - b);
  }

  /** The available CPUs in the units `ids` of `level`. */
  freeIn(level: Level, ...ids: number[]): number[] {
    return this.freeCpus().filter((c) => ids.includes(this.topo.get(c)![level]));
  }

  /** The IDs of `level` of `cpus`, ascending. */
  private unitsOf(level: Level, cpus: Iterable<number>): number[] {
    return [...cpuSet([...cpus].map((c) => this.topo.get(c)![level]))];
  }

  /** The units of `level` with available CPUs, within the unit `within` when given. */
  private freeUnits(level: Level, within?: { level: Level; id: number }): number[] {
    const cpus = within ? this.freeIn(within.level, within.id) : this.freeCpus();
    return this.unitsOf(level, cpus);
  }

  /** `ids` of `level`, fewest available CPUs first, then by ID (upstream's sort). */
  private sorted(level: Level, ids: number[]): number[] {
    const freeCount = new Map(ids.map((id) => [id, this.freeIn(level, id).length]));
    return [...ids].sort((a, b) => freeCount.get(a)! - freeCount.get(b)! || a - b);
  }

  /** NUMA nodes with available CPUs, in upstream's sortAvailableNUMANodes order. */
  sortedNumaNodes(): number[] {
    if (this.numaFirst) return this.sorted('numaNodeId', this.freeUnits('numaNodeId'));
    return this.sortedSockets().flatMap((s) =>
      this.sorted('numaNodeId', this.freeUnits('numaNodeId', { level: 'socketId', id: s })),
    );
  }

  /** Sockets with available CPUs, in upstream's sortAvailableSockets order. */
  private sortedSockets(): number[] {
    if (!this.numaFirst) return this.sorted('socketId', this.freeUnits('socketId'));
    return this.sortedNumaNodes().flatMap((n) =>
      this.sorted('socketId', this.freeUnits('socketId', { level: 'numaNodeId', id: n })),
    );
  }

  /** Cores with available CPUs, in upstream's sortAvailableCores order. */
  private sortedCores(): number[] {
    const [outer, units] = this.numaFirst
      ? (['socketId', this.sortedSockets()] as const)
      : (['numaNodeId', this.sortedNumaNodes()] as const);
    return units.flatMap((u) => this.sorted('coreId', this.freeUnits('coreId', { level: outer, id: u })));
  }

  /** Whether every CPU of unit `id` of `level` is available. */
  private whole(level: Level, id: number): boolean {
    const all = [...this.topo.keys()].filter((c) => this.topo.get(c)![level] === id);
    return all.every((c) => this.free.has(c));
  }

  take(cpus: readonly number[]): void {
    for (const c of cpus) {
      this.free.delete(c);
      this.result.push(c);
    }
    this.needed -= cpus.length;
  }

  /** Takes every wholly available unit of `level` the request still needs all of. */
  private takeWhole(level: Level, order: number[]): void {
    for (const id of order.filter((u) => this.whole(level, u))) {
      const cpus = [...this.topo.keys()].filter((c) => this.topo.get(c)![level] === id);
      if (this.needed >= cpus.length) this.take(cpus);
    }
  }

  satisfied(): boolean {
    return this.needed < 1;
  }

  failed(): boolean {
    return this.needed > this.free.size;
  }

  /** upstream takeByTopologyNUMAPacked's steps, from an accumulator that is neither satisfied nor failed. */
  pack(): Taken {
    const [first, second]: Level[] = this.numaFirst ? ['numaNodeId', 'socketId'] : ['socketId', 'numaNodeId'];
    const order = (level: Level) => (level === 'numaNodeId' ? this.sortedNumaNodes() : this.sortedSockets());
    for (const step of [
      () => this.takeWhole(first, order(first)),
      () => this.takeWhole(second, order(second)),
      () => this.takeWhole('coreId', this.sortedCores()),
      () => {
        for (const cpu of this.sortedCores().flatMap((core) => this.freeIn('coreId', core))) {
          this.take([cpu]);
          if (this.satisfied()) return;
        }
      },
    ]) {
      step();
      if (this.satisfied()) return { ok: true, cpus: cpuSet(this.result) };
    }
    return { ok: false, message: 'failed to allocate cpus' };
  }
}

/** `numCpus` CPUs out of `available` packed onto as few units as possible, or upstream's error message. */
export function takeByTopology(topo: CpuTopology, available: CpuSet, numCpus: number): Taken {
  const acc = new CpuAccumulator(topo, available, numCpus);
  if (acc.satisfied()) return { ok: true, cpus: [] };
  if (acc.failed()) return { ok: false, message: notEnoughCpus(numCpus, available.length) };
  return acc.pack();
}
