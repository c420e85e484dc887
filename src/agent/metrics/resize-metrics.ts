/**
 * Upstream's in-place resize metrics (pkg/kubelet/metrics, v1.34+): each requested change of a
 * container's cpu or memory, how long each actuation took and whether it succeeded, the resizes
 * pending (by reason) and in progress (read when scraped), the infeasible ones (by detail) and
 * those accepted after being deferred (by what retried them).
 */
import { Counter, Gauge, Histogram } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';
import type { RequestedResize } from '../allocation/resize-events.js';
import type { ResizeState } from '../allocation/resize-state.js';

const DURATION_BUCKETS_MS = [10, 50, 100, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000, 120000, 300000, 600000];

export interface ResizeMetrics {
  requested(changes: readonly RequestedResize[]): void;
  actuated(milliseconds: number, success: boolean): void;
  infeasible(detail: string): void;
  deferredAccepted(trigger: 'pod_resized' | 'periodic_retry'): void;
}

export function registerResizeMetrics(metrics: KubeletMetrics, states: () => Iterable<ResizeState>): ResizeMetrics {
  const requested = metrics.register(
    new Counter(
      'kubelet_container_requested_resizes_total',
      "[ALPHA] Number of requested resizes, counted at the container level. Different resources on the same container are counted separately. The 'requirement' label refers to 'memory' or 'limits'; the 'operation' label can be one of 'add', 'remove', 'increase' or 'decrease'.",
      ['operation', 'requirement', 'resource'],
    ),
  );
  const duration = metrics.register(
    new Histogram(
      'kubelet_pod_resize_duration_milliseconds',
      '[ALPHA] Duration in milliseconds to actuate a pod resize',
      ['success'],
      DURATION_BUCKETS_MS,
    ),
  );
  metrics.register(
    new Gauge('kubelet_pod_pending_resizes', '[ALPHA] Number of pending resizes for pods.', ['reason'], (g) => {
      const counts = { deferred: 0, infeasible: 0 };
      for (const s of states()) if (s.pending) counts[s.pending.reason === 'Deferred' ? 'deferred' : 'infeasible']++;
      for (const [reason, n] of Object.entries(counts)) g.set({ reason }, n);
    }),
  );
  metrics.register(
    new Gauge('kubelet_pod_in_progress_resizes', '[ALPHA] Number of in-progress resizes for pods.', [], (g) =>
      g.set(undefined, [...states()].filter((s) => s.inProgress).length),
    ),
  );
  const infeasible = metrics.register(
    new Counter('kubelet_pod_infeasible_resizes_total', '[ALPHA] Number of infeasible resizes for pods.', [
      'reason_detail',
    ]),
  );
  const deferredAccepted = metrics.register(
    new Counter(
      'kubelet_pod_deferred_accepted_resizes_total',
      '[ALPHA] Cumulative number of resizes that were accepted after being deferred.',
      ['retry_trigger'],
    ),
  );
  return {
    requested: (changes) => {
      for (const c of changes)
        requested.inc({ operation: c.operation, requirement: c.requirement, resource: c.resource });
    },
    actuated: (ms, success) => duration.observe({ success: String(success) }, ms),
    infeasible: (detail) => infeasible.inc({ reason_detail: detail }),
    deferredAccepted: (trigger) => deferredAccepted.inc({ retry_trigger: trigger }),
  };
}
