/**
 * Writes pod statuses to the apiserver (upstream status_manager.go syncPod / syncBatch):
 * 1. for every desired pod whose status version is newer than the last one written, PATCH the
 *    status subresource — for a static pod, its mirror pod's — with the two-way strategic-merge
 *    patch from the status the apiserver has (the last PATCH's answer, else the watched object)
 *    to the new one, conditions owned by others kept (status-patch.ts), the pod UID as
 *    precondition; one pass at a time, so a stale version never overwrites a newer one; a terminal
 *    phase waits until the pod's worker has stopped its containers (as upstream);
 *    404 (pod gone) and 409 (pod replaced) end that pod's sync; other failures retry with backoff;
 * 2. a pod being deleted whose containers are gone (`canBeDeleted`) and whose final status was
 *    written is DELETEd with gracePeriodSeconds 0 and a UID precondition, completing
 *    `kubectl delete pod`.
 * Runs on every status change (coalesced) and every 10 s.
 */
import type { Pod, PodStatus } from '../../api/types.js';
import { mergePodStatus, twoWayMergePatch } from './status-patch.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { messageOf } from '../../lib/errors.js';
import { isStaticPod } from '../podconfig/types.js';
import type { PodManager } from '../pods/pod-manager.js';
import { deletePodNow } from '../pods/delete-pod.js';
import type { StatusManager } from './status-manager.js';

/** What the syncer needs. */
export interface StatusSyncDeps {
  client: KubeClient;
  statusManager: StatusManager;
  podManager: PodManager;
  /** True when the pod's containers are gone for good (worker terminated, or never admitted). */
  canBeDeleted(uid: string): boolean;
  /**
   * True while the pod's worker has not stopped its containers: no terminal phase is written before (mergePodStatus).
   */
  couldHaveRunningContainers?(uid: string): boolean;
  clock: Clock;
  logger: Logger;
  periodMs?: number;
  /**
   * Seconds from the first change of a pod's status not yet written to the write that carried it
   * (kubelet_pod_status_sync_duration_seconds).
   */
  observeSync?(seconds: number): void;
}

/** Syncs statuses. */
export class StatusSync {
  private readonly written = new Map<string, number>();
  /** The status the apiserver answered to our last PATCH, by pod UID: the base of the next patch. */
  private readonly apiStatus = new Map<string, PodStatus>();
  private readonly deleted = new Set<string>();
  /** When each pod's status first changed since its last write (monotonic ms). */
  private readonly changedSince = new Map<string, number>();
  private running = false;
  private again = false;
  private cancel: (() => void) | undefined;
  private failures = 0;
  private stopped = false;

  constructor(private readonly deps: StatusSyncDeps) {
    deps.statusManager.onChange((uid) => {
      if (!this.changedSince.has(uid)) this.changedSince.set(uid, performance.now());
    });
  }

  /** Asks for a pass soon (coalesced). */
  trigger(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    this.cancel?.();
    this.cancel = this.deps.clock.setTimer(() => void this.pass(), ms);
  }

  /** One pass over every pod; resolves when done. Returns the number of failed writes. */
  async pass(): Promise<number> {
    if (this.running) {
      this.again = true;
      return 0;
    }
    this.running = true;
    let failed = 0;
    try {
      do {
        this.again = false;
        failed = 0;
        for (const pod of this.deps.podManager.getPods()) if (!(await this.syncPod(pod))) failed++;
        for (const uid of [...this.written.keys(), ...this.deleted, ...this.changedSince.keys()])
          if (!this.deps.podManager.getPodByUid(uid)) {
            this.written.delete(uid);
            this.changedSince.delete(uid);
            this.deleted.delete(uid);
            this.apiStatus.delete(uid);
          }
      } while (this.again);
    } finally {
      this.running = false;
    }
    this.failures = failed ? this.failures + 1 : 0;
    this.schedule(
      failed ? Math.min(1000 * 2 ** (this.failures - 1), this.deps.periodMs ?? 10_000) : (this.deps.periodMs ?? 10_000),
    );
    return failed;
  }

  /** Writes one pod's status (and deletes it when due); false when a write failed and should be retried. */
  private async syncPod(pod: Pod): Promise<boolean> {
    const uid = pod.metadata.uid!;
    const vs = this.deps.statusManager.versioned(uid);
    const target = isStaticPod(pod) ? this.deps.podManager.getMirrorOf(pod) : pod;
    if (!vs || !target) return true;
    try {
      if ((this.written.get(uid) ?? 0) < vs.version) {
        const base = this.apiStatus.get(uid) ?? target.status ?? {};
        const merged = mergePodStatus(base, vs.status, this.deps.couldHaveRunningContainers?.(uid) ?? false);
        // A held-back terminal phase leaves the version unwritten: the next pass (the worker's stop, or the period)
        // sends it.
        const version = merged.phase === vs.status.phase ? vs.version : vs.version - 1;
        const patch = twoWayMergePatch(base as Record<string, unknown>, merged as Record<string, unknown>);
        if (!Object.keys(patch).length) {
          this.written.set(uid, version);
          return true;
        }
        const r = await this.deps.client.request<Pod>({
          method: 'PATCH',
          path: `/api/v1/namespaces/${target.metadata.namespace}/pods/${target.metadata.name}/status`,
          contentType: 'application/strategic-merge-patch+json',
          body: { metadata: { uid: target.metadata.uid }, status: patch },
        });
        if (r.status === 200 || r.status === 404 || r.status === 409)
          this.written.set(uid, r.status === 200 ? version : vs.version);
        else {
          this.apiStatus.delete(uid);
          throw apiError('patching pod status', r);
        }
        if (r.status === 200 && r.body?.status) this.apiStatus.set(uid, r.body.status);
        const since = this.changedSince.get(uid);
        if (since !== undefined && this.written.get(uid) === this.deps.statusManager.versioned(uid)?.version) {
          this.changedSince.delete(uid);
          if (r.status === 200) this.deps.observeSync?.((performance.now() - since) / 1000);
        }
        if (r.status !== 200)
          this.deps.logger.debug(
            { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, status: r.status },
            'pod status not written: pod gone or replaced',
          );
      }
      if (
        target === pod &&
        pod.metadata.deletionTimestamp &&
        !this.deleted.has(uid) &&
        this.deps.canBeDeleted(uid) &&
        this.written.get(uid) === this.deps.statusManager.versioned(uid)?.version
      ) {
        await deletePodNow(this.deps.client, pod);
        this.deleted.add(uid);
        this.deps.logger.info(
          { pod: `${pod.metadata.namespace}/${pod.metadata.name}` },
          'pod fully terminated and removed from the API',
        );
      }
      return true;
    } catch (err) {
      this.deps.logger.warn(
        { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, err: messageOf(err) },
        'failed to update pod status; will retry',
      );
      return false;
    }
  }

  /** Starts syncing. */
  start({ signal }: { signal: AbortSignal }): void {
    this.deps.logger.info('Starting to sync pod status with apiserver');
    this.deps.statusManager.onChange(() => this.trigger());
    signal.addEventListener(
      'abort',
      () => {
        this.stopped = true;
        this.cancel?.();
      },
      { once: true },
    );
    this.schedule(0);
  }
}
