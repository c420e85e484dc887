/**
 * The pod and QoS cgroups on a CRI runtime with cgroupsPerQOS and the cgroupfs driver (upstream
 * podContainerManager.EnsureExists and the QoS/node-allocatable cgroups): before a pod's first
 * sandbox, `<root>/kubepods[/burstable|/besteffort]/pod<uid>` is made with the pod's resource
 * settings (pod-resource-config.ts), so the runtime puts the sandbox and containers under a
 * parent that already limits the pod as a whole. At start the QoS level is made: BestEffort gets
 * the minimum CPU shares and, with enforceNodeAllocatable "pods", kubepods is capped at the
 * node's allocatable (capacity − kube- and system-reserved). The Burstable cgroup's CPU shares
 * follow the Burstable pods' requests, set before each new pod cgroup and every minute (upstream
 * UpdateQOSCgroups), so Burstable pods as a class get the CPU they asked for under contention.
 *
 * The hierarchies are lib/cgroup-hierarchies.ts's (v1: cpu, cpuacct, memory, pids; v2: the unified one,
 * with the controllers enabled on the way down). An existing pod cgroup is
 * left as it is, as upstream's. Removal is the garbage collector's (gc/pod-cgroups.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../../api/types.js';
import { messageOf } from '../../lib/errors.js';
import {
  milliCpuToShares,
  MIN_SHARES,
  podCgroupParent,
  qosLevelDir,
  type CgroupContext,
} from '../runtime/linux-resources.js';
import { resourceConfigForPod } from './pod-resource-config.js';
import { cgroupWrites, type ResourceConfig } from '../../lib/cgroup-limits.js';
import { podRequests } from '../admission/predicate.js';
import { qosClass } from '../status/generate-pod-status.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { periodically } from '../../lib/periodically.js';
import { pathExists } from '../../lib/fs-util.js';
import { detectHierarchies, hierarchyDirs, makeCgroup, type Hierarchies } from '../../lib/cgroup-hierarchies.js';

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
  /** podPidsLimit (≤ 0: none). */
  podPidsLimit: number;
  /** The cgroup filesystem (tests point it elsewhere). */
  fsRoot?: string;
  /** The pods the kubelet runs, for the Burstable class's shares. */
  activePods?: () => Pod[];
  observe?: CgroupOpObserver;
}

/** Makes the QoS and pod cgroups. */
export class PodCgroupManager {
  private hierarchies: Promise<Hierarchies | undefined> | undefined;
  /** The CPU shares last written to each QoS class's cgroup: a new pod rewrites only a change. */
  private readonly qosShares = new Map<string, number>();
  constructor(private readonly deps: PodCgroupManagerDeps) {}

  private found(): Promise<Hierarchies | undefined> {
    this.hierarchies ??= detectHierarchies(this.deps.fsRoot);
    return this.hierarchies;
  }

  /** Makes `rel` in every hierarchy used and applies `config` (timed as a 'create'). */
  private async create(rel: string, config: ResourceConfig): Promise<void> {
    const h = await this.found();
    if (!h) return;
    await timedCgroupOp(this.deps.observe, 'create', async () => {
      makeCgroup(h, rel);
      this.apply(h, rel, config);
    });
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
    this.apply(h, cgroup, config);
  }

  /**
   * The QoS level (at start): kubepods (capped at `allocatable` when given), burstable, besteffort with the minimum
   * shares.
   */
  async ensureQosCgroups(allocatable?: { cpuMilli: number; memoryBytes: number }): Promise<void> {
    const root = this.deps.cgroups.cgroupRoot;
    const cap = allocatable
      ? { cpuShares: milliCpuToShares(allocatable.cpuMilli), memoryLimit: allocatable.memoryBytes }
      : {};
    await this.create(qosLevelDir(root, 'Guaranteed'), cap);
    await this.create(qosLevelDir(root, 'Burstable'), {});
    await this.create(qosLevelDir(root, 'BestEffort'), { cpuShares: MIN_SHARES });
    this.qosShares.set(qosLevelDir(root, 'BestEffort'), MIN_SHARES);
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
    const root = this.deps.cgroups.cgroupRoot;
    for (const [rel, cpuShares] of [
      [qosLevelDir(root, 'Burstable'), milliCpuToShares(burstable)],
      [qosLevelDir(root, 'BestEffort'), MIN_SHARES],
    ] as const) {
      if (!force && this.qosShares.get(rel) === cpuShares) continue;
      // Noted before the write returns: pods ensured meanwhile do not write the same value again.
      this.qosShares.set(rel, cpuShares);
      await timedCgroupOp(this.deps.observe, 'update', async () => {
        try {
          this.apply(h, rel, { cpuShares });
        } catch {
          makeCgroup(h, rel);
          this.apply(h, rel, { cpuShares });
        }
      }).catch((err: unknown) => {
        this.qosShares.delete(rel);
        throw err;
      });
    }
  }

  /**
   * Makes the pod's cgroup with its settings unless it exists (upstream EnsureExists, after
   * UpdateQOSCgroups). One mkdir per hierarchy, under the QoS cgroup made at start, tells both
   * (a missing parent is made on the way down). As upstream's, only a cgroup that was missing
   * counts as a 'create'.
   */
  async ensure(pod: Pod): Promise<void> {
    const rel = podCgroupParent(pod, this.deps.cgroups);
    const h = await this.found();
    if (!h) return;
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
      const config = resourceConfigForPod(pod, {
        enforceCpuLimits: this.deps.cpuCFSQuota,
        cpuPeriodUs: this.deps.cpuCFSQuotaPeriodUs,
        podPidsLimit: this.deps.podPidsLimit,
      });
      this.apply(h, rel, config);
    });
  }

  /**
   * Writes the pod's settings into its existing cgroup again: an in-place resize changed its
   * resources (the resize manager orders this against the containers' updates).
   */
  async resize(pod: Pod): Promise<void> {
    const h = await this.found();
    if (!h) return;
    const config = resourceConfigForPod(pod, {
      enforceCpuLimits: this.deps.cpuCFSQuota,
      cpuPeriodUs: this.deps.cpuCFSQuotaPeriodUs,
      podPidsLimit: this.deps.podPidsLimit,
    });
    await timedCgroupOp(this.deps.observe, 'update', async () =>
      this.apply(h, podCgroupParent(pod, this.deps.cgroups), config),
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
