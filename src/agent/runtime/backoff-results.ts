/**
 * Step 4 of a pod's actions: a container still backing off after a crash is not started; it gets
 * upstream's BackOff event and a CrashLoopBackOff result that says when to try again.
 */
import type { Pod } from '../../api/types.js';
import { podRef, type EventSink } from '../events/recorder.js';
import type { PodActions } from './compute-pod-actions.js';
import type { StepResult } from './step-result.js';

/** A BackOff event and result for each container of `plan` still backing off, added to `results`; returns `results`. */
export function backoffResults(pod: Pod, plan: PodActions, results: StepResult[], events?: EventSink): StepResult[] {
  for (const h of plan.backoff) {
    events?.record(
      podRef(pod, { name: h.name, init: h.init }),
      'Warning',
      'BackOff',
      `Back-off restarting failed container ${h.name} in pod ${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
    );
    results.push({
      action: 'StartContainer',
      target: h.name,
      init: h.init,
      ok: false,
      reason: 'CrashLoopBackOff',
      message: h.message,
      retryAfterMs: h.remainingMs,
    });
  }
  return results;
}
