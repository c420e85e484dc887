/**
 * Which CPUs an exclusive allocation takes (upstream cpu_assignment.go's cpuAccumulator and
 * takeByTopologyNUMAPacked): whole units of the larger of NUMA node and socket first, then of the
 * smaller, when the request needs at least one; with prefer-align-cpus-by-uncorecache, then whole
 * uncore (L3) caches the request needs all of, or else the cores of one cache that hold the request
 * exactly; then whole cores; then single CPUs — with distribute-cpus-across-cores (upstream's
 * spread strategy) no whole cores, and the single CPUs in ID order within the sockets in their
 * order, which puts a request on as many cores as it can. Each time the
 * units are walked best-fit, fewest free CPUs first (lowest ID on ties), one larger unit at a
 * time: with NUMA nodes that hold sockets (as many sockets as NUMA nodes or more), the NUMA nodes,
 * the sockets in each, the cores in each socket; with sockets that hold several NUMA nodes (sub-NUMA
 * clustering), the sockets, the NUMA nodes in each, the cores in each NUMA node. Pure.
 */
import { cpuSet, type CpuSet } from '../../lib/cpuset.js';
import { cpusPerCore, type CpuTopology } from './topology.js';

export type Level = 'socketId' | 'numaNodeId' | 'coreId' | 'uncoreCacheId';

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

  /** The unit of `level` CPU `cpu` is in; a CPU without a known uncore cache has its socket's (upstream). */
  private unitOf(cpu: number, level: Level): number {
    const info = this.topo.get(cpu)!;
    return level === 'uncoreCacheId' ? (info.uncoreCacheId ?? info.socketId) : info[level];
  }

  /** The available CPUs, ascending. */
  freeCpus(): number[] {
    return [...this.free].sort((a, b) => a - b);
  }

  /** The available CPUs in the units `ids` of `level`. */
  freeIn(level: Level, ...ids: number[]): number[] {
    return this.freeCpus().filter((c) => ids.includes(this.unitOf(c, level)));
  }

  /** The IDs of `level` of `cpus`, ascending. */
  private unitsOf(level: Level, cpus: Iterable<number>): number[] {
    return [...cpuSet([...cpus].map((c) => this.unitOf(c, level)))];
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
  sortedSockets(): number[] {
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

  /** Every CPU of unit `id` of `level`, available or not. */
  private cpusOf(level: Level, id: number): number[] {
    return [...this.topo.keys()].filter((c) => this.unitOf(c, level) === id);
  }

  /** Whether every CPU of unit `id` of `level` is available. */
  private whole(level: Level, id: number): boolean {
    return this.cpusOf(level, id).every((c) => this.free.has(c));
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
      const cpus = this.cpusOf(level, id);
      if (this.needed >= cpus.length) this.take(cpus);
      if (this.satisfied()) return;
    }
  }

  /** Uncore caches with available CPUs: the NUMA nodes in their order, in each fewest available CPUs first. */
  private sortedUncoreCaches(): number[] {
    return this.sortedNumaNodes().flatMap((n) =>
      this.sorted('uncoreCacheId', this.freeUnits('uncoreCacheId', { level: 'numaNodeId', id: n })),
    );
  }

  /**
   * upstream takeUncoreCache: for each uncore cache in order, the whole caches the request needs all of (when it needs
   * at least a cache's worth), then the free cores of this cache when they hold what is left exactly (whole cores:
   * what is left over the CPUs per core, rounded down, as upstream's takePartialUncore).
   */
  private takeUncoreCaches(): void {
    const caches = this.unitsOf('uncoreCacheId', this.topo.keys());
    const perCache = caches.length ? Math.floor(this.topo.size / caches.length) : 0;
    const perCore = cpusPerCore(this.topo);
    for (const cache of this.sortedUncoreCaches()) {
      if (this.needed >= perCache) this.takeWhole('uncoreCacheId', caches);
      if (this.satisfied()) return;
      const cores = this.unitsOf('coreId', this.freeIn('uncoreCacheId', cache)).slice(
        0,
        perCore ? Math.floor(this.needed / perCore) : 0,
      );
      const cpus = this.freeIn('coreId', ...cores);
      if (cpus.length === this.needed) this.take(cpus);
      if (this.satisfied()) return;
    }
  }

  satisfied(): boolean {
    return this.needed < 1;
  }

  failed(): boolean {
    return this.needed > this.free.size;
  }

  /** upstream takeByTopologyNUMAPacked's steps, from an accumulator that is neither satisfied nor failed. */
  pack({ preferAlignByUncoreCache = false, spread = false }: PackOptions = {}): Taken {
    const [first, second]: Level[] = this.numaFirst ? ['numaNodeId', 'socketId'] : ['socketId', 'numaNodeId'];
    const order = (level: Level) => (level === 'numaNodeId' ? this.sortedNumaNodes() : this.sortedSockets());
    for (const step of [
      () => this.takeWhole(first, order(first)),
      () => this.takeWhole(second, order(second)),
      () => preferAlignByUncoreCache && this.takeUncoreCaches(),
      () => spread || this.takeWhole('coreId', this.sortedCores()),
      () => {
        // Packed: the fullest cores' CPUs first; spread: each socket's CPUs by ID (upstream sortAvailableCPUsSpread).
        const order = spread
          ? this.sortedSockets().flatMap((socket) => this.freeIn('socketId', socket))
          : this.sortedCores().flatMap((core) => this.freeIn('coreId', core));
        for (const cpu of order) {
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

/** How the packing goes. */
export interface PackOptions {
  /** prefer-align-cpus-by-uncorecache. */
  preferAlignByUncoreCache?: boolean;
  /** distribute-cpus-across-cores: upstream's CPUSortingStrategySpread. */
  spread?: boolean;
}

/** `numCpus` CPUs out of `available` packed onto as few units as possible, or upstream's error message. */
export function takeByTopology(
  topo: CpuTopology,
  available: CpuSet,
  numCpus: number,
  options: PackOptions = {},
): Taken {
  const acc = new CpuAccumulator(topo, available, numCpus);
  if (acc.satisfied()) return { ok: true, cpus: [] };
  if (acc.failed()) return { ok: false, message: notEnoughCpus(numCpus, available.length) };
  return acc.pack(options);
}
