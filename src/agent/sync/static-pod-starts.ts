/**
 * The start order of static pods that share a full name (upstream pod_workers.go
 * allowStaticPodStart): at most one pod per `name_namespace` is started at a time, and the others
 * start in the order they arrived once it has finished. An edited manifest is a new pod (a new
 * UID) with the old one's name: the new one waits until the old one's containers are stopped and
 * its resources released, so two copies of, say, a host-network kube-apiserver never run at once.
 */
export class StaticPodStarts {
  /** The pod that holds each full name. */
  private readonly started = new Map<string, string>();
  /** The pods waiting for each full name, in arrival order. */
  private readonly waiting = new Map<string, string[]>();

  /** The pod that holds `fullName`, if any. */
  holder(fullName: string): string | undefined {
    return this.started.get(fullName);
  }

  /** Records a static pod seen for the first time (its place in the queue). */
  enqueue(fullName: string, uid: string): void {
    const queue = this.waiting.get(fullName);
    if (queue) queue.push(uid);
    else this.waiting.set(fullName, [uid]);
  }

  /**
   * True when pod `uid` may start now: it already holds the name, or no pod holds it and `uid` is
   * the first waiting pod that `isLive` (not terminating nor gone). Taking the name removes `uid`
   * and the dead pods before it from the queue.
   */
  allow(fullName: string, uid: string, isLive: (uid: string) => boolean): boolean {
    const holder = this.started.get(fullName);
    if (holder !== undefined) return holder === uid;
    const queue = this.waiting.get(fullName) ?? [];
    let rest = queue;
    for (let i = 0; i < queue.length; i++) {
      if (!isLive(queue[i])) continue;
      if (queue[i] !== uid) {
        this.waiting.set(fullName, queue.slice(i));
        return false;
      }
      rest = queue.slice(i + 1);
      break;
    }
    if (rest.length) this.waiting.set(fullName, rest);
    else this.waiting.delete(fullName);
    this.started.set(fullName, uid);
    return true;
  }

  /** Gives the name up if `uid` holds it; returns the pods waiting for it (to be tried again). */
  release(fullName: string, uid: string): readonly string[] {
    if (this.started.get(fullName) === uid) this.started.delete(fullName);
    return this.waiting.get(fullName) ?? [];
  }
}
