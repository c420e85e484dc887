/** When each pod is next due for a sync (upstream queue.WorkQueue). */
export class WorkQueue {
  private readonly due = new Map<string, number>();
  /** Schedules `uid` at `now + delayMs`, keeping an earlier existing schedule. */
  enqueue(uid: string, atMs: number): void {
    const cur = this.due.get(uid);
    if (cur === undefined || atMs < cur) this.due.set(uid, atMs);
  }
  /** Removes and returns every uid due at `nowMs`. */
  takeReady(nowMs: number): string[] {
    const out: string[] = [];
    for (const [uid, at] of this.due)
      if (at <= nowMs) {
        out.push(uid);
        this.due.delete(uid);
      }
    return out;
  }
  /** Drops a pod. */
  remove(uid: string): void {
    this.due.delete(uid);
  }
}
