/**
 * Wiring of the kubelet's own metrics around the core: pod worker durations per operation, and
 * kubelet_pod_start_duration_seconds (from the pod first seen to all its containers running).
 */
import type { Clock } from '../lib/clock.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import type { PodManager } from './pods/pod-manager.js';
import type { StatusManager } from './status/status-manager.js';

/** Wraps `fn` so each call is observed in kubelet_pod_worker_duration_seconds{operation}. */
export function timedWorker<A extends unknown[], R>(metrics: KubeletMetrics, operation: string, fn: (...a: A) => Promise<R>): (...a: A) => Promise<R> {
  return async (...a: A): Promise<R> => {
    const end = metrics.podWorkerDuration.startTimer({ operation });
    try {
      return await fn(...a);
    } finally {
      end();
    }
  };
}

/** Observes each pod's start duration once, when its status first shows every container running. */
export function trackPodStartDuration(d: { statusManager: StatusManager; podManager: PodManager; metrics: KubeletMetrics; clock: Clock }): void {
  const firstSeen = new Map<string, number>();
  d.statusManager.onChange((uid) => {
    if (firstSeen.get(uid) === -1) return;
    if (!d.podManager.getPodByUid(uid)) {
      firstSeen.delete(uid);
      return;
    }
    if (!firstSeen.has(uid)) firstSeen.set(uid, d.clock.now());
    const st = d.statusManager.get(uid);
    if (st?.phase === 'Running' && (st.containerStatuses ?? []).every((c) => c.state.running)) {
      d.metrics.podStartDuration.observe((d.clock.now() - firstSeen.get(uid)!) / 1000);
      firstSeen.set(uid, -1);
    }
  });
}
