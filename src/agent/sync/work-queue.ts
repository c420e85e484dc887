/** When each pod is next due for a sync (upstream queue.WorkQueue). */
export class WorkQueue {
  private readonly due = new Map<string, number>();
  /** Schedules `uid` at `now + delayMs`, keeping an earlier existing schedule. */
  enqueue(uid: string, atMs: number): void {
    const cur = this.due.get(uid);
    if (cur === undefined || atMs < cur) this.due.set(uid, atMs);
  }
  /**
   * Removes and returns every uid due at `nowMs`. Runs every second over every pod: `forEach`
   * allocates no iterator result per entry (a [uid, at] pair and its wrapper under the interpreter).
   */
  takeReady(nowMs: number): string[] {
    const out: string[] = [];
    this.due.forEach((at, uid) => {
      if (at > nowMs) return;
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
