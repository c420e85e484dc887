/**
 * What a new status keeps of the phase before it (upstream generateAPIPodStatus), pure:
 *  - a pod never leaves Succeeded or Failed: a generated phase that is not terminal takes the
 *    previous status's terminal phase, and the apiserver's terminal phase always wins (after a
 *    kubelet restart the previous status is the apiserver's) — except for a static pod, which
 *    may start again with the same UID (kubernetes#116484);
 *  - while the phase stays the same, so do its reason and message (an eviction's `Evicted`).
 */
import { isTerminalPhase, type Pod, type PodPhase, type PodStatus } from '../../api/types.js';
import { isStaticPod } from '../podconfig/types.js';

/** The phase, reason and message of the new status, given the generated phase. */
export function stickyPhase(
  pod: Pod,
  generated: PodPhase,
  previous: PodStatus | undefined,
): Pick<PodStatus, 'phase' | 'reason' | 'message'> {
  let phase = generated;
  const api = pod.status?.phase;
  if (!isStaticPod(pod)) {
    if (!isTerminalPhase(phase) && isTerminalPhase(previous?.phase)) phase = previous.phase;
    if (isTerminalPhase(api)) phase = api;
  }
  if (phase !== previous?.phase) return { phase };
  const reason = previous.reason || pod.status?.reason;
  const message = previous.message || pod.status?.message;
  return { phase, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
}
