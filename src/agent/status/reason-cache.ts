/**
 * Why a container is not running, from the last sync's failed start steps (upstream
 * ReasonCache): "CrashLoopBackOff", "ErrImagePull", "RunContainerError"… Cleared on success.
 */
import type { StepResult } from '../runtime/step-result.js';

/** A waiting reason and message. */
export interface WaitingReason {
  reason: string;
  message: string;
}

/** Per pod UID and container name. */
export class ReasonCache {
  private readonly m = new Map<string, Map<string, WaitingReason>>();

  /** Records the outcome of a sync's start steps. */
  update(uid: string, results: StepResult[]): void {
    for (const r of results) {
      if (r.action !== 'StartContainer') continue;
      let pod = this.m.get(uid);
      if (r.ok) {
        pod?.delete(r.target);
        continue;
      }
      if (!pod) {
        pod = new Map();
        this.m.set(uid, pod);
      }
      pod.set(r.target, { reason: r.reason ?? 'Error', message: r.message ?? '' });
    }
  }

  /** A copy of a pod's reasons, for status generation. */
  snapshot(uid: string): ReadonlyMap<string, WaitingReason> {
    return new Map(this.m.get(uid) ?? []);
  }
  /** Forgets a pod. */
  remove(uid: string): void {
    this.m.delete(uid);
  }
}
