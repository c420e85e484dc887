/** The eviction manager's wiring (agent/eviction): its signals from the stats collector, its victims through the pod workers. */
import { totalmem } from 'node:os';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { AgentConfig } from './agent-config.js';
import type { Pod } from '../api/types.js';
import type { AdmitResult } from './admission/predicate.js';
import { EvictionManager } from './eviction/eviction-manager.js';
import { parseThresholds } from './eviction/signals.js';
import type { EventRecorder } from './events/recorder.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import type { GarbageCollector } from './gc/garbage-collector.js';
import type { ImageGc } from './gc/image-gc.js';
import { isStaticPod } from './podconfig/types.js';
import type { PodManager } from './pods/pod-manager.js';
import type { StatsCollector } from './stats/collector.js';
import type { VolumeStatsCollector } from './volume/volume-stats.js';
import type { PodSync } from './sync/pod-sync.js';
import type { PodWorkers } from './sync/pod-workers.js';

/** Upstream's evictionPressureTransitionPeriod default. */
const DEFAULT_TRANSITION_MS = 5 * 60_000;

export function composeEviction(
  cfg: AgentConfig,
  o: {
    collector: StatsCollector;
    volumeStats: VolumeStatsCollector;
    podManager: PodManager;
    workers: PodWorkers;
    syncer: PodSync;
    gc: GarbageCollector;
    imageGc: ImageGc;
    events: EventRecorder;
    metrics: KubeletMetrics;
    clock: Clock;
    logger: Logger;
  },
): EvictionManager {
  return new EvictionManager({
    thresholds: cfg.evictionThresholds ?? parseThresholds(cfg.node.evictionHard),
    maxPodGraceSeconds: cfg.evictionMaxPodGraceSeconds,
    transitionMs: cfg.evictionPressureTransitionMs ?? DEFAULT_TRANSITION_MS,
    memoryCapacityBytes: totalmem(),
    snapshot: () => o.collector.snapshot(),
    volumeUsage: (uid) => o.volumeStats.get(uid),
    localStorageLimits: cfg.node.localStorageCapacityIsolation !== false,
    activePods: () => o.podManager.getPods().filter((p) => o.workers.stateOf(p.metadata.uid!) === 'sync'),
    isStatic: isStaticPod,
    evict: (pod, message, graceSeconds) => {
      o.syncer.evicted(pod.metadata.uid!, message);
      o.workers.update({ pod, kind: 'kill', gracePeriodSeconds: graceSeconds });
    },
    reclaimDisk: async () => {
      await o.gc.collectContainers();
      await o.imageGc.garbageCollect();
    },
    events: o.events,
    onEviction: (signal) => o.metrics.evictions.inc({ eviction_signal: signal }),
    clock: o.clock,
    logger: o.logger,
  });
}

/** The eviction manager's refusal of `pod` (the node is under pressure), or undefined when it admits it. */
export function refusedUnderPressure(e: EvictionManager, pod: Pod): AdmitResult | undefined {
  const r = e.admit(pod);
  return r.admit ? undefined : r;
}
