/**
 * The eviction manager (upstream pkg/kubelet/eviction): every 10 s it first
 * evicts, with no grace period, every pod over a local storage limit (local-storage.ts), then observes
 * the signals in the latest stats snapshot, raises MemoryPressure / DiskPressure / PIDPressure
 * while a threshold is met (and for evictionPressureTransitionPeriod after), and under pressure
 * 1. for disk, reclaims node-level resources first (dead containers, unused images: what the filesystem under
 *    pressure holds, disk-layout.ts) and judges again; 2. otherwise evicts one pod — ranked by rank.ts on what it
 *    uses of that filesystem, never a critical one —
 *    with a 1 s grace period (a soft threshold, met for its own grace period first: the pod's, at
 *    most evictionMaxPodGracePeriod), phase Failed, reason Evicted and upstream's message; the next one
 *    only on stats sampled after that pod had time to die (upstream waits for its cleanup), so one
 *    stale snapshot never costs two pods.
 * It also admits pods as upstream's does under pressure: with only MemoryPressure, everything
 * but BestEffort pods (and those tolerating the memory-pressure taint); with any other, only
 * critical pods.
 */
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import { periodically } from '../../lib/periodically.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import type { ContainerSample, StatsSnapshot } from '../stats/samples.js';
import { qosClass } from '../status/qos-class.js';
import { podRef, type EventSink } from '../events/recorder.js';
import type { ObjectRef } from '../events/event.js';
import { tolerates, type AdmitResult, type Toleration } from '../admission/predicate.js';
import {
  observe,
  pressureConditions,
  resourceOf,
  thresholdsMet,
  type PressureCondition,
  type Threshold,
} from './signals.js';
import { evictionMessage, isCriticalPod, rankForEviction, type Candidate, type EvictionNotice } from './rank.js';
import { localStorageViolation } from './local-storage.js';
import {
  nodeReclaimFor,
  podDiskUseCounted,
  SINGLE_FILESYSTEM,
  withContainerFsThresholds,
  type DiskLayout,
  type PodDiskUse,
} from './disk-layout.js';

/** Upstream's evictionMonitoringPeriod and the grace period of a hard eviction. */
export const EVICTION_PERIOD_MS = 10_000;
const HARD_EVICTION_GRACE_SECONDS = 1;

/** What the manager needs. */
export interface EvictionDeps {
  /** Hard thresholds, and soft ones (with `graceMs`). */
  thresholds: Threshold[];
  /** evictionMaxPodGracePeriod: the longest grace period of a pod evicted for a soft threshold. */
  maxPodGraceSeconds?: number;
  transitionMs: number;
  memoryCapacityBytes: number;
  snapshot(): StatsSnapshot | undefined;
  /** Samples the stats now and returns them (after a node-level reclaim); absent: the latest snapshot is judged. */
  sample?(): Promise<StatsSnapshot | undefined>;
  /** The pods the kubelet runs (not yet terminated). */
  activePods(): Pod[];
  isStatic(pod: Pod): boolean;
  /** Kills the pod with `graceSeconds` and makes its status Failed / Evicted / `message`. */
  evict(pod: Pod, message: string, graceSeconds: number): void;
  /** localStorageCapacityIsolation: false turns the local storage limits off (upstream's switch). */
  localStorageLimits?: boolean;
  /**
   * A pod's measured volumes (name, bytes used, whether on the node's disk), for local storage limits and disk
   * pressure; absent: local storage limits are not enforced.
   */
  volumeUsage?(uid: string): { name: string; usedBytes: number; inodesUsed?: number; localEphemeral?: boolean }[];
  /** Node-level reclaim under disk pressure: removes dead containers, unused images. */
  reclaim?: Record<'containers' | 'images', () => Promise<unknown>>;
  /**
   * The KubeletSeparateDiskGC gate (beta, on): off, a runtime with a split image filesystem stops the manager's
   * passes, as upstream.
   */
  separateDiskGc?: boolean;
  events?: EventSink;
  /** The Node, for its EvictionThresholdMet events. */
  node?: ObjectRef;
  /** Upstream's eviction metrics, by signal name. */
  metrics?: {
    /** After each eviction (kubelet_evictions). */
    evicted(signal: string): void;
    /** The age of the stats a met threshold is acted on with (kubelet_eviction_stats_age_seconds). */
    statsAge(signal: string, seconds: number): void;
  };
  clock: Clock;
  logger: Logger;
}

/** Order in which met thresholds are dealt with: memory first, as upstream. */
const ORDER: Record<string, number> = { memory: 0, 'ephemeral-storage': 1, inodes: 2, pids: 3 };

export class EvictionManager {
  private readonly lastMet = new Map<PressureCondition, number>();
  private current = new Set<PressureCondition>();
  /** When the last pod was evicted (ms): later evictions judge only snapshots taken after it died. */
  private lastEvictionMs = -Infinity;
  /** When each threshold met now was first met (soft thresholds act only once met for their grace period). */
  private readonly firstMet = new Map<Threshold, number>();
  /** The thresholds met last pass (they stay met until their minimum reclaim is available). */
  private metLast: Threshold[] = [];
  /** The node's disk layout, once a snapshot has shown it (upstream decides it once too). */
  private layout?: DiskLayout;
  /** The configured thresholds with the containerfs ones the layout gives (SINGLE_FILESYSTEM's until it is known). */
  private thresholds: Threshold[];
  /** Evictions made (tests, metrics). */
  evictions = 0;

  constructor(private readonly deps: EvictionDeps) {
    this.thresholds = withContainerFsThresholds(deps.thresholds, SINGLE_FILESYSTEM).thresholds;
  }

  /**
   * Takes the disk layout the snapshot shows, the first time it shows one: the containerfs thresholds follow it.
   * Throws upstream's error while the KubeletSeparateDiskGC gate is off on a split image filesystem.
   */
  private learnLayout(shown: DiskLayout | undefined): void {
    if (this.layout || !shown) return;
    if (this.deps.separateDiskGc === false && shown.splitContainerFs)
      throw new Error('KubeletSeparateDiskGC is turned off but we still have a split filesystem');
    const { thresholds, ignored } = withContainerFsThresholds(this.deps.thresholds, shown);
    if (ignored.length)
      this.deps.logger.warn({ ignored }, 'eviction manager: found conflicting containerfs eviction. Ignoring.');
    this.deps.logger.info({ ...shown }, 'eviction manager: filesystem detection');
    this.layout = shown;
    this.thresholds = thresholds;
  }

  /** The pressure conditions now (for the node status and admission). */
  conditions(): ReadonlySet<PressureCondition> {
    return this.current;
  }

  /** Upstream's eviction admit handler. */
  admit(pod: Pod): AdmitResult {
    const conds = [...this.current];
    if (!conds.length || isCriticalPod(pod, this.deps.isStatic(pod))) return { admit: true };
    if (conds.length === 1 && conds[0] === 'MemoryPressure') {
      const tols = (pod.spec.tolerations ?? []) as Toleration[];
      if (
        qosClass(pod) !== 'BestEffort' ||
        tolerates(tols, { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' })
      )
        return { admit: true };
    }
    return { admit: false, reason: 'Evicted', message: `The node had condition: [${conds.join(' ')}]. ` };
  }

  /** One pass; returns the pod it evicted, if any. */
  async synchronize(): Promise<Pod | undefined> {
    const snap = this.deps.snapshot();
    if (!snap) return undefined;
    this.learnLayout(snap.node.diskLayout);
    const layout = this.layout ?? SINGLE_FILESYSTEM;
    const byPod = containersByPod(snap);
    const overLimit =
      this.deps.localStorageLimits === false ? undefined : this.localStorageEviction(byPod, snap.podFiles);
    const obs = observe(snap, this.deps.memoryCapacityBytes);
    // Grace periods and the pressure transition period are waits: on the monotonic clock.
    const now = this.deps.clock.monotonic();
    const met = thresholdsMet(this.thresholds, obs, this.metLast).sort(
      (a, b) => ORDER[resourceOf(a.signal)] - ORDER[resourceOf(b.signal)],
    );
    this.metLast = met;
    for (const t of [...this.firstMet.keys()]) if (!met.includes(t)) this.firstMet.delete(t);
    for (const t of met) if (!this.firstMet.has(t)) this.firstMet.set(t, now);
    const before = this.current;
    // Conditions follow every met threshold, soft ones before their grace period too (as upstream).
    this.current = pressureConditions(met, this.lastMet, now, this.deps.transitionMs);
    for (const c of this.current)
      if (!before.has(c))
        this.deps.logger.warn(
          { condition: c, thresholds: met.map((t) => `${t.signal}<${t.raw}`) },
          'node under pressure',
        );
    if (overLimit) return overLimit;
    const actionable = met.filter((t) => now - this.firstMet.get(t)! >= (t.graceMs ?? 0));
    if (!actionable.length) return undefined;
    for (const t of actionable)
      this.deps.metrics?.statsAge(t.signal, Math.max(0, this.deps.clock.now() - snap.atMs) / 1000);
    if (snap.atMs <= this.lastEvictionMs + HARD_EVICTION_GRACE_SECONDS * 1000 + 1000) return undefined;
    const t = actionable[0];
    const resourceName = resourceOf(t.signal);
    // Upstream's log lines and the Node's EvictionThresholdMet event, which operators look for.
    this.deps.logger.info({ resourceName }, 'Eviction manager: attempting to reclaim');
    if (this.deps.node)
      this.deps.events?.record(
        this.deps.node,
        'Warning',
        'EvictionThresholdMet',
        `Attempting to reclaim ${resourceName}`,
      );
    const reclaims = this.deps.reclaim ? nodeReclaimFor(t.signal, layout) : [];
    if (reclaims.length) {
      for (const r of reclaims) await this.deps.reclaim![r]();
      // Judged again on stats sampled now, as upstream asks its summary provider for fresh ones: enough freed, no
      // eviction; still short, a pod is evicted in this pass.
      const after = this.deps.sample ? await this.deps.sample() : this.deps.snapshot();
      if (!after || !thresholdsMet([t], observe(after, this.deps.memoryCapacityBytes)).length) {
        this.deps.logger.info(
          { resourceName },
          'Eviction manager: able to reduce resource pressure without evicting pods.',
        );
        return undefined;
      }
    }
    this.deps.logger.info({ resourceName }, 'Eviction manager: must evict pod(s) to reclaim');
    const candidates = this.deps
      .activePods()
      .filter((p) => !isCriticalPod(p, this.deps.isStatic(p)))
      .map((pod) =>
        candidate(pod, t, snap, byPod, {
          counted: podDiskUseCounted(t.signal, layout),
          volumes: (uid) => this.deps.volumeUsage?.(uid) ?? [],
        }),
      );
    const ranked = rankForEviction(candidates, t);
    const victim = ranked[0];
    if (!victim) {
      this.deps.logger.error(
        { threshold: `${t.signal}<${t.raw}` },
        'Eviction manager: unable to evict any pods from the node',
      );
      return undefined;
    }
    this.deps.logger.info(
      { pods: ranked.map((c) => `${c.pod.metadata.namespace}/${c.pod.metadata.name}`) },
      'Eviction manager: pods ranked for eviction',
    );
    const grace =
      t.graceMs === undefined
        ? HARD_EVICTION_GRACE_SECONDS
        : Math.min(this.deps.maxPodGraceSeconds ?? 0, victim.pod.spec.terminationGracePeriodSeconds ?? 30);
    this.evictPod(victim.pod, evictionMessage(t, obs.get(t.signal)!, victim), grace, t.signal);
    this.lastEvictionMs = this.deps.clock.now();
    return victim.pod;
  }

  /**
   * Logs, records the Evicted event (with the notice's annotations, upstream's AnnotatedEventf), kills the pod with
   * `graceSeconds` and counts the eviction under `signal`.
   */
  private evictPod(pod: Pod, notice: EvictionNotice, graceSeconds: number, signal: string): void {
    const { message, annotations } = notice;
    this.deps.logger.info(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, signal },
      `evicting pod: ${message.trim()}`,
    );
    this.deps.events?.record(podRef(pod), 'Warning', 'Evicted', message, annotations);
    this.deps.evict(pod, message, graceSeconds);
    this.deps.logger.info(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}` },
      'Eviction manager: pod is evicted successfully',
    );
    this.evictions++;
    this.deps.metrics?.evicted(signal);
  }

  /** Evicts (grace 0) every non-critical pod over a local storage limit; returns the first. */
  private localStorageEviction(
    byPod: ReadonlyMap<string, ContainerSample[]>,
    podFiles: StatsSnapshot['podFiles'],
  ): Pod | undefined {
    if (!this.deps.volumeUsage) return undefined;
    let first: Pod | undefined;
    for (const pod of this.deps.activePods()) {
      if (isCriticalPod(pod, this.deps.isStatic(pod))) continue;
      const uid = pod.metadata.uid!;
      // Each container's writable layer + logs.
      const containers = new Map(
        (byPod.get(uid) ?? []).map((c) => [c.name, (c.rootfsUsed ?? 0) + (c.logsUsed ?? 0)] as const),
      );
      const volumes = new Map(this.deps.volumeUsage(uid).map((v) => [v.name, v.usedBytes] as const));
      const violation = localStorageViolation(pod, { volumes, containers, podFiles: podFiles.get(uid)?.bytes });
      if (!violation) continue;
      this.evictPod(pod, { message: violation.message }, 0, violation.signal);
      first ??= pod;
    }
    return first;
  }

  /** Runs every 10 s until `signal` aborts; never throws. */
  start({ signal }: { signal: AbortSignal }): void {
    if (!this.deps.thresholds.length && !this.deps.volumeUsage) return;
    periodically(() => this.synchronize(), {
      periodMs: EVICTION_PERIOD_MS,
      signal,
      clock: this.deps.clock,
      immediately: true,
      onError: (err) => this.deps.logger.warn({ err: messageOf(err) }, 'eviction manager pass failed'),
    });
  }
}

/** The snapshot's containers by pod UID. */
function containersByPod(s: StatsSnapshot): Map<string, ContainerSample[]> {
  const out = new Map<string, ContainerSample[]>();
  for (const c of s.containers) (out.get(c.podUid) ?? out.set(c.podUid, []).get(c.podUid)!).push(c);
  return out;
}

/**
 * What `pod` uses of the threshold's resource in the snapshot: processes, memory, or of the disk under pressure (bytes
 * or inodes) what `disk.counted` names (upstream podDiskUsage). Each container's figure,
 * for the message, is its writable layer and logs in bytes, as upstream's message gives it.
 */
function candidate(
  pod: Pod,
  t: Threshold,
  s: StatsSnapshot,
  byPod: ReadonlyMap<string, ContainerSample[]>,
  disk: {
    counted: readonly PodDiskUse[];
    volumes: (uid: string) => { usedBytes: number; inodesUsed?: number; localEphemeral?: boolean }[];
  },
): Candidate {
  const uid = pod.metadata.uid!;
  const resource = resourceOf(t.signal);
  const cs = byPod.get(uid) ?? [];
  // A pod with stats has its event annotated (starved_resource) whatever the resource, as upstream's.
  if (resource === 'pids')
    return { pod, usage: s.pods.get(uid)?.processCount, ...(cs.length ? { containers: [] } : {}) };
  if (!cs.length) return { pod };
  if (resource === 'memory') {
    const containers = cs.map((c) => ({ name: c.name, usage: c.workingSet ?? 0 }));
    const usage = containers.reduce((n, c) => n + c.usage, 0);
    return { pod, usage, containers, podMemory: s.pods.get(uid)?.workingSet ?? usage };
  }
  const containers = cs.map((c) => ({ name: c.name, usage: (c.rootfsUsed ?? 0) + (c.logsUsed ?? 0) }));
  const counts = (use: PodDiskUse) => disk.counted.includes(use);
  const inodes = resource === 'inodes';
  let usage = 0;
  for (const c of cs) {
    if (counts('rootfs')) usage += (inodes ? c.rootfsInodesUsed : c.rootfsUsed) ?? 0;
    if (counts('logs')) usage += (inodes ? c.logsInodesUsed : c.logsUsed) ?? 0;
  }
  if (counts('localVolumes'))
    for (const v of disk.volumes(uid)) if (v.localEphemeral) usage += (inodes ? v.inodesUsed : v.usedBytes) ?? 0;
  return { pod, usage, containers };
}
