/**
 * The garbage collection loops (upstream StartGarbageCollection + housekeeping's orphan cleanup):
 * every minute — 1. dead containers (with their logs and legacy log links) and sandboxes per the
 * container GC plan; 2. pod log directories, pod directories and pod cgroups of pods neither
 * wanted nor in the runtime, and legacy log links left dangling by containers gone or exited;
 * at start and every 5 minutes — 3. image GC by disk usage.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import { periodically } from '../../lib/periodically.js';
import type { CgroupOpObserver } from '../cgroups/pod-cgroup-manager.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import type { RuntimeManager } from '../runtime/runtime-manager.js';
import { containerGcPlan, type ContainerGcPolicy } from './container-gc-plan.js';
import type { ImageGc } from './image-gc.js';
import { removeOrphanedPodCgroups, type PodCgroupNaming } from './pod-cgroups.js';
import { legacyLogSymlink, removeContainerLogs, removeDanglingLinks } from '../runtime/logs/legacy-log-links.js';
import { ContainerNameLabel, PodNameLabel, PodNamespaceLabel } from '../runtime/labels.js';

/** Upstream ContainerGCPeriod and ImageGCPeriod. */
export const CONTAINER_GC_PERIOD_MS = 60_000;
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

/** What the collector needs. */
export interface GarbageCollectorDeps {
  runtime: RuntimeService;
  runtimeManager: RuntimeManager;
  imageGc: ImageGc;
  clock: Clock;
  logger: Logger;
  policy: ContainerGcPolicy;
  podLogsDir: string;
  /** Where the legacy container log links are (absent: none are made). */
  containerLogsDir?: string;
  rootDir: string;
  /** /sys/fs/cgroup, or "" to leave cgroups alone (the process runtime makes none). */
  cgroupFsRoot: string;
  /** Times each orphaned pod cgroup's removal (kubelet_cgroup_manager_duration_seconds). */
  observeCgroup?: CgroupOpObserver;
  /** How pod cgroups are named (root, driver) and systemd's manager for the systemd driver's slices. */
  cgroupNaming: PodCgroupNaming;
  /** Whether a source (or a worker still finishing it) wants the pod. */
  isActive(uid: string): boolean;
  /** Where the Node's ContainerGCFailed and ImageGCFailed warnings go. */
  nodeEvents?: (type: 'Warning', reason: string, message: string) => void;
  /** Whether the pod has terminated (its worker is done) though not yet deleted: a Succeeded or Failed pod. */
  isTerminated?(uid: string): boolean;
  /**
   * Removes a pod directory (unmounting its volumes first); false when its volumes could not be released (the
   * directory is kept for the next sweep); default: plain removal.
   */
  removePodDir?(uid: string): Promise<boolean>;
  /**
   * Each sweep's orphaned pod directories and those whose cleanup failed (upstream's
   * kubelet_orphan_pod_cleaned_volumes / _errors).
   */
  orphanSweep?(orphans: number, failed: number): void;
}

/** The pod UID of a log dir name <namespace>_<name>_<uid>. */
export function uidOfLogDir(name: string): string | undefined {
  const i = name.lastIndexOf('_');
  return i > 0 ? name.slice(i + 1) : undefined;
}

/** Runs the collections. */
export class GarbageCollector {
  constructor(private readonly deps: GarbageCollectorDeps) {}

  /**
   * Removes the directories of pods neither wanted nor in the runtime (upstream cleanupOrphanedPodDirs): one that
   * fails is logged and kept for the next sweep, the others go on; the sweep's counts are reported.
   */
  private async removeOrphanedPodDirs(keep: (uid: string) => boolean): Promise<void> {
    const podsDir = join(this.deps.rootDir, 'pods');
    let orphans = 0;
    let failed = 0;
    for (const uid of await readdir(podsDir).catch(() => [] as string[])) {
      if (keep(uid)) continue;
      orphans++;
      try {
        const removed = this.deps.removePodDir
          ? await this.deps.removePodDir(uid)
          : await rm(join(podsDir, uid), { recursive: true, force: true }).then(() => true);
        if (!removed) failed++;
      } catch (err) {
        failed++;
        this.deps.logger.warn({ podUID: uid, err: messageOf(err) }, 'Failed to remove orphaned pod dir');
      }
    }
    this.deps.orphanSweep?.(orphans, failed);
  }

  /**
   * 1–2 once. With `evictTerminatedPods` (the eviction manager's reclaim under disk pressure, upstream
   * DeleteAllUnusedContainers) the dead containers of a terminated pod not yet deleted go too, none kept.
   */
  async collectContainers(o: { evictTerminatedPods?: boolean } = {}): Promise<void> {
    if (o.evictTerminatedPods) this.deps.logger.info('Attempting to delete unused containers');
    const pods = await this.deps.runtimeManager.listRuntimePods();
    const keepsContainers = (uid: string) =>
      this.deps.isActive(uid) && !(o.evictTerminatedPods && this.deps.isTerminated?.(uid));
    const plan = containerGcPlan(pods, keepsContainers, this.deps.clock.now(), this.deps.policy);
    for (const id of plan.containers)
      await this.removeContainer(id).catch((err) =>
        this.deps.logger.warn({ id, err: messageOf(err) }, 'failed to remove container'),
      );
    for (const id of plan.sandboxes) {
      await this.deps.runtime.stopPodSandbox(id).catch(() => {});
      await this.deps.runtime
        .removePodSandbox(id)
        .catch((err) => this.deps.logger.warn({ id, err: messageOf(err) }, 'failed to remove sandbox'));
    }
    const inRuntime = new Set(pods.map((p) => p.uid));
    const keep = (uid: string) => this.deps.isActive(uid) || inRuntime.has(uid);
    for (const name of await readdir(this.deps.podLogsDir).catch(() => [] as string[])) {
      const uid = uidOfLogDir(name);
      if (uid && !keep(uid)) await rm(join(this.deps.podLogsDir, name), { recursive: true, force: true });
    }
    await this.removeOrphanedPodDirs(keep);
    const linksDir = this.deps.containerLogsDir;
    if (linksDir) {
      const alive = (id: string) =>
        this.deps.runtime.containerStatus(id).then(
          (r) => r.status.state !== 'CONTAINER_EXITED',
          () => false,
        );
      for (const link of await removeDanglingLinks(linksDir, alive))
        this.deps.logger.debug({ path: link }, 'removed dead container log symlink');
    }
    if (!this.deps.cgroupFsRoot) return;
    for (const { uid, killed } of await removeOrphanedPodCgroups(
      this.deps.cgroupFsRoot,
      keep,
      this.deps.cgroupNaming,
      this.deps.observeCgroup,
    ))
      if (killed)
        this.deps.logger.info(
          { podUID: uid, killed },
          'Orphaned pod found, killed the processes left in its cgroups and removed them',
        );
  }

  /**
   * Removes a dead container, then its log, rotated logs and legacy link (upstream removeContainer +
   * removeContainerLog).
   */
  private async removeContainer(id: string): Promise<void> {
    const s = await this.deps.runtime.containerStatus(id).then(
      (r) => r.status,
      () => undefined,
    );
    await this.deps.runtime.removeContainer(id);
    const l = s?.labels ?? {};
    const dir = this.deps.containerLogsDir;
    const link =
      dir && s
        ? legacyLogSymlink(dir, id, l[ContainerNameLabel] ?? '', l[PodNameLabel] ?? '', l[PodNamespaceLabel] ?? '')
        : undefined;
    await removeContainerLogs({ logPath: s?.log_path, link });
  }

  /**
   * Runs both collections periodically. As upstream: a failed container collection warns on the Node every time
   * (ContainerGCFailed), a failed image collection from the second failure in a row (ImageGCFailed: the first may be
   * stats not sampled yet).
   */
  start({ signal }: { signal: AbortSignal }): void {
    let imageGcFailed = false;
    periodically(() => this.collectContainers(), {
      periodMs: CONTAINER_GC_PERIOD_MS,
      signal,
      clock: this.deps.clock,
      onError: (err) => {
        this.deps.logger.warn({ err: messageOf(err) }, 'Container garbage collection failed');
        this.deps.nodeEvents?.('Warning', 'ContainerGCFailed', messageOf(err));
      },
    });
    periodically(
      async () => {
        await this.deps.imageGc.garbageCollect();
        imageGcFailed = false;
      },
      {
        periodMs: IMAGE_GC_PERIOD_MS,
        signal,
        clock: this.deps.clock,
        immediately: true,
        onError: (err) => {
          if (imageGcFailed) {
            this.deps.logger.warn({ err: messageOf(err) }, 'Image garbage collection failed multiple times in a row');
            this.deps.nodeEvents?.('Warning', 'ImageGCFailed', messageOf(err));
          } else
            this.deps.logger.warn(
              { err: messageOf(err) },
              'Image garbage collection failed once. Stats initialization may not have completed yet',
            );
          imageGcFailed = true;
        },
      },
    );
  }
}
