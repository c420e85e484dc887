/**
 * One pod's sandboxes and containers, read from the runtime with fresh lists that are shared
 * between pods when many ask at once.
 *
 * Each pod sync reads its pod with ListPodSandbox and ListContainers. A runtime answers a label
 * filter by scanning everything it has (containerd does), so a burst of N pods syncing costs
 * O(N²) runtime work in filtered lists. Here the requests that arrive while a read is in flight
 * wait for it to end and are then served together: by one unfiltered list pair when there are
 * several of them (grouped by the pod-UID label), by filtered lists otherwise. A request is only
 * ever answered by lists that began after it was made, so it sees everything that happened
 * before it (a sync reads back the container it has just started).
 */
import type { RuntimeService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import { PodUidLabel } from './labels.js';

/** A pod's sandboxes and containers as the runtime lists them. */
export interface PodLists {
  sandboxes: cri.PodSandbox[];
  containers: cri.Container[];
}

/** Every sandbox and container of the runtime: unfiltered lists, shared (and frozen) between readers. */
export interface RuntimeLists {
  readonly sandboxes: readonly cri.PodSandbox[];
  readonly containers: readonly cri.Container[];
}

interface Waiter {
  uid: string;
  resolve(l: PodLists): void;
  reject(err: unknown): void;
}

/** From this many waiting pods on, one unfiltered list pair serves them all. */
export const SHARED_LIST_MIN_PODS = 3;

/** Groups unfiltered lists by the pod-UID label. Pure. */
export function groupByPod(
  sandboxes: readonly cri.PodSandbox[],
  containers: readonly cri.Container[],
): Map<string, PodLists> {
  const byUid = new Map<string, PodLists>();
  const of = (uid: string | undefined) => {
    if (!uid) return undefined;
    let l = byUid.get(uid);
    if (!l) byUid.set(uid, (l = { sandboxes: [], containers: [] }));
    return l;
  };
  for (const s of sandboxes) of(s.labels?.[PodUidLabel])?.sandboxes.push(s);
  for (const c of containers) of(c.labels?.[PodUidLabel])?.containers.push(c);
  return byUid;
}

/** Fresh per-pod lists, coalesced. */
export class PodListReader {
  private queue: Waiter[] = [];
  private busy = false;

  constructor(private readonly runtime: Pick<RuntimeService, 'listPodSandbox' | 'listContainers'>) {}

  /** The sandboxes and containers labelled with pod `uid`, from lists begun after this call. */
  read(uid: string): Promise<PodLists> {
    return new Promise((resolve, reject) => {
      this.queue.push({ uid, resolve, reject });
      if (!this.busy) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.busy = true;
    while (this.queue.length) {
      const batch = this.queue;
      this.queue = [];
      if (batch.length >= SHARED_LIST_MIN_PODS) await this.shared(batch);
      else await Promise.all(batch.map((w) => this.filtered(w)));
    }
    this.busy = false;
  }

  private async filtered(w: Waiter): Promise<void> {
    const sel = { [PodUidLabel]: w.uid };
    try {
      const [sandboxes, containers] = await Promise.all([
        this.runtime.listPodSandbox({ label_selector: sel }),
        this.runtime.listContainers({ label_selector: sel }),
      ]);
      w.resolve({ sandboxes: [...sandboxes], containers: [...containers] });
    } catch (err) {
      w.reject(err);
    }
  }

  private async shared(batch: Waiter[]): Promise<void> {
    try {
      const [sandboxes, containers] = await Promise.all([this.runtime.listPodSandbox(), this.runtime.listContainers()]);
      const byUid = groupByPod(sandboxes, containers);
      for (const w of batch) {
        const l = byUid.get(w.uid);
        // Two waiters for one pod must not share (and so sort) the same arrays.
        w.resolve(
          l ? { sandboxes: [...l.sandboxes], containers: [...l.containers] } : { sandboxes: [], containers: [] },
        );
      }
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
