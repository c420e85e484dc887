/**
 * Pods whose start waits for other pods to stop: a critical pod admitted by preempting others
 * starts once its victims are stopped, as upstream's killPodNow holds admission until each
 * victim's worker has killed it — or until the victim's grace period and half again (at least
 * 10 s) has passed, when the pod starts anyway and the kubelet reports `ExceededGracePeriod`.
 */

/** How long a start waits for a victim with `graceSeconds` (upstream killPodNow's timeout). */
export function stopTimeoutMs(graceSeconds: number): number {
  return Math.max(graceSeconds + Math.floor(graceSeconds / 2), 10) * 1000;
}

/** The gates, by the UID of the pod that waits. */
export class StartGates {
  private readonly gates = new Map<
    string,
    { victims: string[]; deadlineMs: number; late: (victims: string[]) => void }
  >();

  /**
   * Holds `uid`'s start until `victims` have stopped, or `timeoutMs` from `nowMs` (the clock's monotonic ms),
   * when `wake` is called; `late` is then told of the victims still running.
   */
  hold(
    uid: string,
    victims: string[],
    o: { nowMs: number; timeoutMs: number; wake: () => void; late: (victims: string[]) => void },
  ): void {
    if (!victims.length) return;
    this.gates.set(uid, { victims, deadlineMs: o.nowMs + o.timeoutMs, late: o.late });
    setTimeout(o.wake, o.timeoutMs).unref();
  }

  /**
   * Whether `uid` may start at `nowMs`: no gate, every victim `stopped`, or the deadline passed (the gate then goes).
   */
  open(uid: string, stopped: (victim: string) => boolean, nowMs: number): boolean {
    const g = this.gates.get(uid);
    if (!g) return true;
    const running = g.victims.filter((v) => !stopped(v));
    if (running.length && nowMs < g.deadlineMs) return false;
    this.gates.delete(uid);
    if (running.length) g.late(running);
    return true;
  }

  /** The pods whose start waits for `victim`. */
  waitingOn(victim: string): string[] {
    return [...this.gates].filter(([, g]) => g.victims.includes(victim)).map(([uid]) => uid);
  }
}
