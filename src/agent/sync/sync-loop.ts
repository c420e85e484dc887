/**
 * The sync loop (upstream syncLoopIteration): feeds pod workers from config updates, PLEG events,
 * the 1 s sync ticker (pods due in the work queue) and the 2 s housekeeping tick (cleanup of
 * pods that are no longer desired, once every source has been seen).
 */
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { gracePeriodOf } from '../runtime/kill-pod.js';
import type { PodConfig } from '../podconfig/pod-config.js';
import type { PodUpdate } from '../podconfig/types.js';
import type { PodManager } from '../pods/pod-manager.js';
import type { GenericPleg } from '../pleg/generic-pleg.js';
import type { PodWorkers } from './pod-workers.js';
import type { WorkQueue } from './work-queue.js';

/** What the loop needs. */
export interface SyncLoopDeps {
  podConfig: PodConfig;
  podManager: PodManager;
  workers: PodWorkers;
  pleg: GenericPleg;
  workQueue: WorkQueue;
  clock: Clock;
  logger: Logger;
  housekeeping(): Promise<void>;
}

/** Dispatches work to pod workers. */
export class SyncLoop {
  private lastIterationMs = 0;
  constructor(private readonly d: SyncLoopDeps) {}

  /** When the loop last ran (ms), for /healthz/syncloop. */
  lastIterationAt(): number { return this.lastIterationMs; }

  /** Handles one config update (exposed for tests). */
  handle(u: PodUpdate): void {
    const { podManager, workers } = this.d;
    for (const pod of u.pods) {
      switch (u.op) {
        case 'ADD':
        case 'UPDATE':
          podManager.addOrUpdate(pod);
          if (pod.metadata.deletionTimestamp) workers.update({ pod, kind: 'kill', gracePeriodSeconds: gracePeriodOf(pod) });
          else workers.update({ pod, kind: u.op === 'ADD' ? 'create' : 'update' });
          break;
        case 'REMOVE':
          podManager.remove(pod);
          workers.update({ pod, kind: 'kill' });
          break;
        case 'RECONCILE':
          podManager.addOrUpdate(pod);
          break;
      }
    }
  }

  private syncPod(uid: string): void {
    const pod: Pod | undefined = this.d.podManager.getPodByUid(uid);
    if (pod) this.d.workers.update({ pod, kind: 'sync' });
  }

  /** Starts the loop. */
  start({ signal }: { signal: AbortSignal }): void {
    this.d.podConfig.onUpdate((u) => this.handle(u));
    this.d.pleg.onEvent((e) => this.syncPod(e.uid));
    const tick = () => {
      if (signal.aborted) return;
      this.lastIterationMs = this.d.clock.now();
      for (const uid of this.d.workQueue.takeReady(this.lastIterationMs)) this.syncPod(uid);
      this.d.clock.setTimer(tick, 1000);
    };
    let housekeeping = false;
    const house = async () => {
      if (signal.aborted) return;
      if (!housekeeping && this.d.podConfig.allSourcesSeen()) {
        housekeeping = true;
        try { await this.d.housekeeping(); } catch (err) { this.d.logger.warn({ err: messageOf(err) }, 'housekeeping failed'); }
        housekeeping = false;
      }
      this.d.clock.setTimer(() => void house(), 2000);
    };
    tick();
    void house();
  }
}
