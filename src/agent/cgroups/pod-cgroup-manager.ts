/**
 * The pod and QoS cgroups on a CRI runtime with cgroupsPerQOS (upstream
 * podContainerManager.EnsureExists and the QoS/node-allocatable cgroups): before a pod's first
 * sandbox, `<root>/kubepods[/burstable|/besteffort]/pod<uid>` (cgroupfs driver) or the slice
 * `kubepods[-burstable|-besteffort]-pod<uid>.slice` (systemd driver) is made with the pod's resource
 * settings (pod-resource-config.ts), so the runtime puts the sandbox and containers under a
 * parent that already limits the pod as a whole. At start the QoS level is made: BestEffort gets
 * the minimum CPU shares and, with enforceNodeAllocatable "pods", kubepods is capped at the
 * node's allocatable (capacity − kube- and system-reserved). The Burstable cgroup's CPU shares
 * follow the Burstable pods' requests, set before each new pod cgroup and every minute (upstream
 * UpdateQOSCgroups), so Burstable pods as a class get the CPU they asked for under contention.
 *
 * The hierarchies are lib/cgroup-hierarchies.ts's (v1: cpu, cpuacct, memory, pids; v2: the unified one,
 * with the controllers enabled on the way down). With the systemd driver systemd owns the cgroups: each
 * is a transient slice started through systemd, and its settings are unit properties as well as files
 * (systemd-units.ts), as upstream's libcontainer systemd manager makes them. An existing pod cgroup is
 * left as it is, as upstream's. Removal is the garbage collector's (gc/pod-cgroups.ts).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Pod } from '../../api/types.js';
import { messageOf } from '../../lib/errors.js';
import {
  hugePageLimitsOf,
  milliCpuToShares,
  MIN_SHARES,
  podCgroupPath,
  qosCgroupPath,
  type CgroupContext,
  type QosClass,
} from '../runtime/linux-resources.js';
import { resourceProperties, type SystemdUnits } from './systemd-units.js';
import { resourceConfigForPod, UNBOUNDED_HUGE_PAGES } from './pod-resource-config.js';
import { cpuQuotaEnforced } from '../runtime/linux-resources.js';
import { cgroupWrites, type ResourceConfig } from '../../lib/cgroup-limits.js';
import { podRequests } from '../admission/predicate.js';
import { qosClass } from '../status/qos-class.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { periodically } from '../../lib/periodically.js';
import { pathExists } from '../../lib/fs-util.js';
import { detectHierarchies, hierarchyDirs, makeCgroup, type Hierarchies } from '../../lib/cgroup-hierarchies.js';

/** The v1 hierarchies whose files carry a cgroup's settings (cgroup-limits.ts). */
const WRITTEN_V1 = ['cpu', 'memory', 'pids'];
/** How long a started slice's cgroup directories may take to appear. */
const SLICE_CGROUP_WAIT_MS = 2000;

/** Sees each cgroup operation and its seconds (kubelet_cgroup_manager_duration_seconds{operation_type}). */
export type CgroupOpObserver = (op: 'create' | 'update' | 'destroy', seconds: number) => void;

/** Times `fn` as `op` for `observe` (when given). */
export async function timedCgroupOp<T>(
  observe: CgroupOpObserver | undefined,
  op: 'create' | 'update' | 'destroy',
  fn: () => Promise<T>,
): Promise<T> {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    observe?.(op, (performance.now() - t0) / 1000);
  }
}

/** What the manager needs. */
export interface PodCgroupManagerDeps {
  cgroups: CgroupContext;
  /** cpuCFSQuota and its period (µs). */
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodUs: number;
  /** Whether a pod holds exclusive CPUs: its cgroup gets no CFS quota (DisableCPUQuotaWithExclusiveCPUs). */
  exclusiveCpus?: (podUid: string) => boolean;
  /** podPidsLimit (≤ 0: none). */
  podPidsLimit: number;
  /** The cgroup filesystem (tests point it elsewhere). */
  fsRoot?: string;
  /** The pods the kubelet runs, for the Burstable class's shares. */
  activePods?: () => Pod[];
  observe?: CgroupOpObserver;
  /** systemd's manager: required with the systemd driver. */
  systemd?: SystemdUnits;
  /** The huge page sizes the machine has, in kB (their hugetlb limits are set where the kernel has the controller). */
  hugePageSizesKb?: readonly number[];
}

/**
 * The node's allocatable, which kubepods is capped at: cpu, memory and each huge page size (`hugepages-2Mi` → bytes).
 */
export interface NodeAllocatable {
  cpuMilli: number;
  memoryBytes: number;
  hugePageBytes?: Readonly<Record<string, number>>;
}

/** Makes the QoS and pod cgroups. */
export class PodCgroupManager {
  private hierarchies: Promise<Hierarchies | undefined> | undefined;
  /** The CPU shares last written to each QoS class's cgroup: a new pod rewrites only a change. */
  private readonly qosShares = new Map<string, number>();
  constructor(private readonly deps: PodCgroupManagerDeps) {}

  private found(): Promise<Hierarchies | undefined> {
    this.hierarchies ??= detectHierarchies(this.deps.fsRoot, ['hugetlb']);
    return this.hierarchies;
  }

  /** systemd's manager when the driver is systemd. */
  private get systemd(): SystemdUnits | undefined {
    if (this.deps.cgroups.cgroupDriver !== 'systemd') return undefined;
    if (!this.deps.systemd) throw new Error('the systemd cgroup driver needs systemd');
    return this.deps.systemd;
  }

  /** Makes `rel` in every hierarchy used (systemd: starts its slice) and applies `config` (timed as a 'create'). */
  private async create(rel: string, config: ResourceConfig): Promise<void> {
    const h = await this.found();
    if (!h) return;
    await timedCgroupOp(this.deps.observe, 'create', () => this.make(h, rel, config));
  }

  /**
   * Makes `rel` with `config`: a directory in each hierarchy, or a slice systemd starts with `config` as properties.
   */
  private async make(h: Hierarchies, rel: string, config: ResourceConfig): Promise<void> {
    const systemd = this.systemd;
    if (!systemd) {
      makeCgroup(h, rel);
      this.apply(h, rel, config);
      return;
    }
    const properties = resourceProperties(config, h.version);
    if ((await systemd.startSlice(basename(rel), properties)) === 'existed')
      await systemd.setProperties(basename(rel), properties);
    await this.sliceRealized(h, rel);
    // systemd makes no cgroup in a hierarchy it does not manage (hugetlb): libcontainer makes it, and so does this.
    if (h.version === 1) makeCgroup(h, rel);
    this.apply(h, rel, config);
  }

  /**
   * The huge page sizes whose limits are set: the machine's, where the kernel has the hugetlb controller. Not on cgroup
   * v2 under systemd, which enables in its slices only the controllers it manages.
   */
  private hugePageSizes(h: Hierarchies): readonly number[] {
    if (!h.byController.has('hugetlb') || (h.version === 2 && this.deps.cgroups.cgroupDriver === 'systemd')) return [];
    return this.deps.hugePageSizesKb ?? [];
  }

  /** Every huge page size unbounded (upstream setHugePagesUnbounded, for the QoS tiers); {} without hugetlb. */
  private unboundedHugePages(h: Hierarchies): ResourceConfig {
    const sizes = this.hugePageSizes(h);
    return sizes.length ? { hugePageLimits: hugePageLimitsOf(sizes, () => UNBOUNDED_HUGE_PAGES) } : {};
  }

  /**
   * Waits (briefly) for the cgroup of a slice systemd started: systemd makes it in each hierarchy as it realizes the
   * unit, which may come just after the start.
   */
  private async sliceRealized(h: Hierarchies, rel: string): Promise<void> {
    const end = Date.now() + SLICE_CGROUP_WAIT_MS;
    while (!this.written(h, rel).every((d) => existsSync(d)) && Date.now() < end)
      await new Promise((r) => setTimeout(r, 10));
  }

  /** The directories of `rel` that the kubelet writes settings to (v1: cpu, memory, pids; v2: the unified one). */
  private written(h: Hierarchies, rel: string): string[] {
    const mounts = h.version === 2 ? [h.byController.get('')] : WRITTEN_V1.map((c) => h.byController.get(c));
    return mounts.filter((m): m is string => !!m).map((m) => join(m, rel));
  }

  /** Sets `config` on the existing `rel`: its files, after its unit's properties with the systemd driver. */
  private async update(h: Hierarchies, rel: string, config: ResourceConfig): Promise<void> {
    await this.systemd?.setProperties(basename(rel), resourceProperties(config, h.version));
    this.apply(h, rel, config);
  }

  /** Writes `config` into `rel` in the hierarchies it needs; a failed write names the file. */
  private apply(h: Hierarchies, rel: string, config: ResourceConfig): void {
    for (const w of cgroupWrites(config, h.version)) {
      const mount = h.byController.get(w.controller);
      if (!mount) continue;
      try {
        writeFileSync(join(mount, rel, w.file), w.value);
      } catch (err) {
        throw new Error(`failed to set ${w.file} of ${rel} to ${w.value}: ${messageOf(err)}`);
      }
    }
  }

  /**
   * Sets `config` on an existing cgroup (`cgroup`, a cgroupfs name such as "/system.slice"), as
   * upstream's enforceExistingCgroup; one that is missing from a hierarchy it needs is an error.
   */
  async enforceExisting(cgroup: string, config: ResourceConfig): Promise<void> {
    const h = await this.found();
    if (!h) return;
    const writes = cgroupWrites(config, h.version);
    const dirs = [...new Set(writes.map((w) => h.byController.get(w.controller)).filter((m): m is string => !!m))].map(
      (m) => join(m, cgroup),
    );
    if (!(await Promise.all(dirs.map(pathExists))).every(Boolean)) throw new Error(`"${cgroup}" cgroup does not exist`);
    await this.update(h, cgroup, config);
  }

  /**
   * The QoS level (at start): kubepods (capped at `allocatable` when given), burstable, besteffort with the minimum
   * shares.
   */
  async ensureQosCgroups(allocatable?: NodeAllocatable): Promise<void> {
    const h = await this.found();
    if (!h) return;
    const qos = (q: QosClass) => qosCgroupPath(this.deps.cgroups, q);
    const sizes = this.hugePageSizes(h);
    const cap: ResourceConfig = allocatable
      ? {
          cpuShares: milliCpuToShares(allocatable.cpuMilli),
          memoryLimit: allocatable.memoryBytes,
          ...(sizes.length
            ? { hugePageLimits: hugePageLimitsOf(sizes, (name) => allocatable.hugePageBytes?.[name]) }
            : {}),
        }
      : {};
    await this.create(qos('Guaranteed'), cap);
    await this.create(qos('Burstable'), this.unboundedHugePages(h));
    await this.create(qos('BestEffort'), { cpuShares: MIN_SHARES, ...this.unboundedHugePages(h) });
    this.qosShares.set(qos('BestEffort'), MIN_SHARES);
  }

  /**
   * The Burstable class's shares from its pods' CPU requests, BestEffort's the minimum (upstream
   * setCPUCgroupConfig). Before a new pod cgroup only a changed value is written (`force`: every
   * value, as the periodic update does); a QoS cgroup that is gone is made again.
   */
  async updateQosCgroups({ force = true }: { force?: boolean } = {}): Promise<void> {
    const h = await this.found();
    if (!h) return;
    const burstable = (this.deps.activePods?.() ?? [])
      .filter((p) => qosClass(p) === 'Burstable')
      .reduce((n, p) => n + podRequests(p).cpuMilli, 0);
    for (const [rel, cpuShares] of [
      [qosCgroupPath(this.deps.cgroups, 'Burstable'), milliCpuToShares(burstable)],
      [qosCgroupPath(this.deps.cgroups, 'BestEffort'), MIN_SHARES],
    ] as const) {
      if (!force && this.qosShares.get(rel) === cpuShares) continue;
      // Noted before the write returns: pods ensured meanwhile do not write the same value again.
      this.qosShares.set(rel, cpuShares);
      const config = { cpuShares, ...this.unboundedHugePages(h) };
      await timedCgroupOp(this.deps.observe, 'update', async () => {
        try {
          await this.update(h, rel, config);
        } catch {
          await this.make(h, rel, config);
        }
      }).catch((err: unknown) => {
        this.qosShares.delete(rel);
        throw err;
      });
    }
  }

  /**
   * Makes the pod's cgroup with its settings unless it exists (upstream EnsureExists, after
   * UpdateQOSCgroups). With cgroupfs, one mkdir per hierarchy, under the QoS cgroup made at start,
   * tells both (a missing parent is made on the way down); with systemd, a slice whose cgroup is
   * missing is started. As upstream's, only a cgroup that was missing counts as a 'create'.
   */
  async ensure(pod: Pod): Promise<void> {
    const rel = podCgroupPath(pod, this.deps.cgroups);
    const h = await this.found();
    if (!h) return;
    if (this.systemd) {
      if (this.written(h, rel).every((d) => existsSync(d))) return;
      await timedCgroupOp(this.deps.observe, 'create', async () => {
        await this.updateQosCgroups({ force: false });
        await this.make(h, rel, this.podConfig(h, pod));
      });
      return;
    }
    const made = hierarchyDirs(h, rel).map((d) => {
      try {
        mkdirSync(d);
        return 'made' as const;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') return 'exists' as const;
        if (code === 'ENOENT') return 'no parent' as const;
        throw err;
      }
    });
    if (made.every((m) => m === 'exists')) return;
    await timedCgroupOp(this.deps.observe, 'create', async () => {
      const remade = made.includes('no parent');
      if (remade) makeCgroup(h, rel);
      await this.updateQosCgroups({ force: remade });
      this.apply(h, rel, this.podConfig(h, pod));
    });
  }

  /** The pod's settings for its cgroup. */
  private podConfig(h: Hierarchies, pod: Pod): ResourceConfig {
    return resourceConfigForPod(pod, {
      enforceCpuLimits: cpuQuotaEnforced(this.deps, pod),
      cpuPeriodUs: this.deps.cpuCFSQuotaPeriodUs,
      podPidsLimit: this.deps.podPidsLimit,
      hugePageSizesKb: this.hugePageSizes(h),
    });
  }

  /**
   * Writes the pod's settings into its existing cgroup again: an in-place resize changed its
   * resources (the resize manager orders this against the containers' updates).
   */
  async resize(pod: Pod): Promise<void> {
    const h = await this.found();
    if (!h) return;
    const config = this.podConfig(h, pod);
    await timedCgroupOp(this.deps.observe, 'update', () =>
      this.update(h, podCgroupPath(pod, this.deps.cgroups), config),
    );
  }

  /** Updates the QoS cgroups every minute (upstream's periodic update), until `signal` aborts. */
  start({ signal, clock, logger }: { signal: AbortSignal; clock: Clock; logger: Logger }): void {
    periodically(() => this.updateQosCgroups(), {
      periodMs: 60_000,
      signal,
      clock,
      onError: (err) => logger.warn({ err: messageOf(err) }, 'updating the QoS cgroups failed'),
    });
  }
}
