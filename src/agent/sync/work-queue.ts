import type { Clock } from '../../lib/clock.js';

/**
 * When each pod is next due for a sync (upstream queue.WorkQueue). Callers give wall times (now + a delay, a pod's
 * deadline); the queue keeps them on the monotonic clock, as upstream's comparisons of time.Now readings do, so a
 * wall clock stepped back an hour does not hold every pod's next sync back an hour.
 */
export class WorkQueue {
  /** Due times on the clock's monotonic time. */
  private readonly due = new Map<string, number>();
  constructor(private readonly clock: Clock) {}
  /** Schedules `uid` at the wall time `atMs`, keeping an earlier existing schedule. */
  enqueue(uid: string, atMs: number): void {
    const at = this.clock.monotonic() + (atMs - this.clock.now());
    const cur = this.due.get(uid);
    if (cur === undefined || at < cur) this.due.set(uid, at);
  }
  /**
   * Removes and returns every uid due now. Runs every second over every pod: `forEach` allocates no iterator result
   * per entry.
   */
  takeReady(): string[] {
    const now = this.clock.monotonic();
    const out: string[] = [];
    this.due.forEach((at, uid) => {
      if (at > now) return;
      out.push(uid);
      this.due.delete(uid);
    });
    return out;
  }
  /** Drops a pod. */
  remove(uid: string): void {
    this.due.delete(uid);
  }
}
