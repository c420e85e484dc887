/**
 * The kubelet's own evictions: the eviction manager's wiring (agent/eviction: its signals from
 * the stats collector, its victims through the pod workers), and pod admission with the
 * preemption of pods for a critical pod (admission/).
 */
import { totalmem } from 'node:os';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { AgentConfig } from './agent-config.js';
import type { Pod } from '../api/types.js';
import { admitPod, type AdmissionNode, type AdmitResult } from './admission/predicate.js';
import { isCritical, podsToPreempt, PREEMPTED, PREEMPTED_DISRUPTION } from './admission/preemption.js';
import { nodeRef, podRef } from './events/recorder.js';
import { Counter } from './metrics/registry.js';
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
    sample: () => o.collector.sample(),
    volumeUsage: (uid) => o.volumeStats.get(uid),
    localStorageLimits: cfg.node.localStorageCapacityIsolation !== false,
    activePods: () => o.podManager.getPods().filter((p) => o.workers.stateOf(p.metadata.uid!) === 'sync'),
    isStatic: isStaticPod,
    evict: (pod, message, graceSeconds) => {
      o.syncer.disrupted(pod.metadata.uid!, { reason: 'Evicted', message, disruption: message });
      o.workers.update({ pod, kind: 'kill', gracePeriodSeconds: graceSeconds });
    },
    // Upstream's DeleteAllUnusedContainers and DeleteUnusedImages: everything that can go, whatever the GC thresholds.
    reclaim: {
      containers: () => o.gc.collectContainers({ evictTerminatedPods: true }),
      images: () => o.imageGc.deleteUnusedImages(),
    },
    separateDiskGc: cfg.separateDiskGc,
    events: o.events,
    node: nodeRef(cfg.nodeName),
    metrics: {
      evicted: (signal) => o.metrics.evictions.inc({ eviction_signal: signal }),
      statsAge: (signal, seconds) => o.metrics.evictionStatsAge.observe({ eviction_signal: signal }, seconds),
    },
    clock: o.clock,
    logger: o.logger,
  });
}

/** The eviction manager's refusal of `pod` (the node is under pressure), or undefined when it admits it. */
export function refusedUnderPressure(e: EvictionManager, pod: Pod): AdmitResult | undefined {
  const r = e.admit(pod);
  return r.admit ? undefined : r;
}

/**
 * Pod admission, handlers in upstream's order: the eviction manager's (no new pod under
 * pressure), then the predicates (admission/predicate.ts), then the node shutdown manager's (no pod
 * while the node shuts down). A critical pod refused for resources
 * alone is admitted once the pods that free them are being killed (upstream
 * CriticalPodAdmissionHandler): each Failed / Preempting with a DisruptionTarget condition, a
 * Warning Preempting event and a count in kubelet_preemptions{preemption_signal}.
 */
export function composeAdmission(
  cfg: AgentConfig,
  o: {
    eviction: () => EvictionManager;
    /** The node shutdown manager (its refusal while the node shuts down); absent without graceful shutdown. */
    nodeShutdown?: { admit(): AdmitResult | undefined };
    node: () => AdmissionNode;
    /** Reads the Node from the apiserver now (NodeInformer.refresh): false when it could not. */
    refreshNode?: () => Promise<boolean>;
    /**
     * The topology manager's allocation of the pod's devices and exclusive CPUs (compose-resource-managers.ts):
     * its refusal, or undefined, or a promise of either while device plugins answer; asked before
     * the predicates, as upstream's allocate-resources admit handler.
     */
    allocateResources?: (pod: Pod, admitted: Pod[]) => AdmitResult | undefined | Promise<AdmitResult | undefined>;
    workers: PodWorkers;
    syncer: PodSync;
    events: EventRecorder;
    metrics: KubeletMetrics;
    logger: Logger;
  },
): (pod: Pod, admitted: Pod[]) => AdmitResult | Promise<AdmitResult> {
  const preemptions = o.metrics.register(
    new Counter('kubelet_preemptions', '[ALPHA] Cumulative number of pod preemptions by preemption resource', [
      'preemption_signal',
    ]),
  );
  const admitAfterResources = (pod: Pod, admitted: Pod[]): AdmitResult => {
    const critical = isCritical(pod);
    const r = admitPod(pod, admitted, {
      node: o.node(),
      isStatic: isStaticPod(pod),
      isCritical: critical,
      allowedUnsafeSysctls: cfg.allowedUnsafeSysctls,
    });
    if (r.admit || !r.shortfalls || !critical) return r;
    const victims = podsToPreempt(pod, admitted, r.shortfalls);
    if (typeof victims === 'string')
      return {
        admit: false,
        reason: 'UnexpectedAdmissionError',
        message: `Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: ${victims}`,
      };
    for (const v of victims) {
      o.logger.info(
        {
          pod: `${v.metadata.namespace}/${v.metadata.name}`,
          requestingPod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        },
        'Preempting pod to free up resources',
      );
      o.events.record(podRef(v), 'Warning', PREEMPTED.reason, PREEMPTED.message);
      o.syncer.disrupted(v.metadata.uid!, { ...PREEMPTED, disruption: PREEMPTED_DISRUPTION });
      o.workers.update({ pod: v, kind: 'kill' });
      preemptions.inc({ preemption_signal: r.shortfalls[0].resource });
    }
    // It starts once they are stopped (upstream killPodNow holds admission until then).
    o.workers.startAfterStopped(pod.metadata.uid!, victims, (late) => {
      for (const v of victims.filter((x) => late.includes(x.metadata.uid!)))
        o.events.record(
          podRef(v),
          'Warning',
          'ExceededGracePeriod',
          'Container runtime did not kill the pod within specified grace period.',
        );
    });
    return { admit: true };
  };
  // A node affinity refusal is decided again on the Node read from the apiserver: the pod may have been scheduled on a
  // label the node watch has not brought yet (upstream's predicate handler since v1.35, kubernetes/kubernetes#134445).
  const predicates = (pod: Pod, admitted: Pod[]): AdmitResult | Promise<AdmitResult> => {
    const r = admitAfterResources(pod, admitted);
    if (r.admit || r.reason !== 'NodeAffinity' || !o.refreshNode) return r;
    return o.refreshNode().then(
      (read) => (read ? admitAfterResources(pod, admitted) : r),
      () => r,
    );
  };
  const admitAfterPredicates = (r: AdmitResult): AdmitResult => (r.admit ? (o.nodeShutdown?.admit() ?? r) : r);
  const afterResources = (pod: Pod, admitted: Pod[], refused: AdmitResult | undefined) => {
    if (refused) return admitAfterPredicates(refused);
    const r = predicates(pod, admitted);
    return r instanceof Promise ? r.then(admitAfterPredicates) : admitAfterPredicates(r);
  };
  return (pod, admitted) => {
    const refused = refusedUnderPressure(o.eviction(), pod);
    if (refused) return refused;
    const refusedResources = o.allocateResources?.(pod, admitted);
    if (refusedResources instanceof Promise) return refusedResources.then((r) => afterResources(pod, admitted, r));
    return afterResources(pod, admitted, refusedResources);
  };
}
