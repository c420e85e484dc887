/**
 * The sync loop (upstream syncLoopIteration): feeds pod workers from config updates, PLEG events,
 * the 1 s sync ticker (pods due in the work queue) and the 2 s housekeeping tick (cleanup of
 * pods that are no longer desired, once every source has been seen).
 * Config updates (upstream HandlePodAdditions/Updates/Removes): mirror pods go to the pod
 * manager's mirror index and re-sync their static pod; a new pod the apiserver already reports
 * as Succeeded/Failed (after a kubelet restart) is never run again: its worker starts terminated
 * and releases what it still holds (PodWorkers.adoptTerminated); new pods are admitted in
 * creation order against the pods already admitted — a rejected pod is recorded (`onRejected`)
 * and never run, and gets no worker (`isInactive`). An admission may wait (the device plugins'
 * answers): the updates behind it wait with it, in order.
 */
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { unexpectedAdmissionError } from '../admission/allocation-refusal.js';
import { gracePeriodOf } from '../runtime/grace-period.js';
import type { PodConfig } from '../podconfig/pod-config.js';
import { isMirrorPod, isStaticPod, type PodUpdate } from '../podconfig/types.js';
import type { AdmitResult } from '../admission/predicate.js';
import type { PodManager } from '../pods/pod-manager.js';
import type { GenericPleg } from '../pleg/generic-pleg.js';
import type { PodWorkers } from './pod-workers.js';
import { hasTerminalPhase, isActivePod } from '../pods/active-pods.js';
import type { WorkQueue } from './work-queue.js';
import { compareStrings } from '../../lib/compare.js';

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
  /** Admission of a new pod next to the admitted ones (absent: every pod is admitted). */
  admit?(pod: Pod, admitted: Pod[]): AdmitResult | Promise<AdmitResult>;
  /** Called once for a pod admission rejected. */
  onRejected?(pod: Pod, reason: string, message: string): void;
}

/** Dispatches work to pod workers. */
export class SyncLoop {
  private lastIterationMs = 0;
  constructor(private readonly deps: SyncLoopDeps) {}

  /** When the loop last ran (the clock's monotonic ms), for /healthz/syncloop. */
  lastIterationAt(): number {
    return this.lastIterationMs;
  }

  private readonly inactive = new Set<string>();

  /** True for a pod that never gets a worker: rejected by admission. */
  isInactive(uid: string): boolean {
    return this.inactive.has(uid);
  }

  /** The active pods (upstream GetActivePods): admitted, and holding the node's resources (pods/active-pods.ts). */
  activePods(): Pod[] {
    return this.deps.podManager
      .getPods()
      .filter((p) => !this.inactive.has(p.metadata.uid!) && isActivePod(p, this.deps.workers.stateOf(p.metadata.uid!)));
  }

  private admitted(except: string): Pod[] {
    return this.activePods().filter((p) => p.metadata.uid !== except);
  }

  private syncStaticOf(mirror: Pod): void {
    const pod = this.deps.podManager.getPodByName(mirror.metadata.namespace!, mirror.metadata.name!);
    if (pod && this.deps.workers.stateOf(pod.metadata.uid!) === 'sync') this.deps.workers.update({ pod, kind: 'sync' });
  }

  /** Updates that came while an admission waited, in order (undefined: none waits). */
  private backlog: PodUpdate[] | undefined;

  /** Handles one config update (exposed for tests). */
  handle(u: PodUpdate): void {
    if (this.backlog) {
      this.backlog.push(u);
      return;
    }
    // Upstream's lines for each update: V(2), RECONCILE V(4) (debug and trace here).
    const level = u.op === 'RECONCILE' ? 'trace' : 'debug';
    if (this.deps.logger.isLevelEnabled(level))
      this.deps.logger[level](
        { source: u.source, pods: u.pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`) },
        `SyncLoop ${u.op}`,
      );
    const pods =
      u.op === 'ADD'
        ? [...u.pods].sort((a, b) =>
            compareStrings(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? ''),
          )
        : u.pods;
    this.handleFrom(u.op, pods, 0);
  }

  /**
   * Handles `pods` from `from` on. An admission that waits (a device plugin's answer) holds the
   * update's remaining pods and every later update until it is decided, as upstream's admission
   * holds its loop: each pod is admitted against the pods admitted before it.
   */
  private handleFrom(op: PodUpdate['op'], pods: readonly Pod[], from: number): void {
    for (let i = from; i < pods.length; i++) {
      const waiting = this.handlePod(op, pods[i]);
      if (!waiting) continue;
      this.backlog = [];
      void waiting.then(() => {
        const held = this.backlog ?? [];
        this.backlog = undefined;
        this.handleFrom(op, pods, i + 1);
        // handle() queues behind a new wait by itself, in order.
        for (const next of held) this.handle(next);
      });
      return;
    }
  }

  /** One pod of an update; a promise while its admission waits. */
  private handlePod(op: PodUpdate['op'], pod: Pod): Promise<void> | undefined {
    const { podManager, workers } = this.deps;
    const uid = pod.metadata.uid!;
    if (isMirrorPod(pod)) {
      if (op === 'REMOVE') podManager.removeMirror(pod);
      else podManager.setMirror(pod);
      this.syncStaticOf(pod);
      return undefined;
    }
    switch (op) {
      case 'ADD':
      case 'UPDATE': {
        const isNew = op === 'ADD' && workers.stateOf(uid) === undefined && !this.inactive.has(uid);
        podManager.addOrUpdate(pod);
        if (this.inactive.has(uid)) return undefined;
        if (isNew && hasTerminalPhase(pod) && !isStaticPod(pod)) {
          workers.adoptTerminated(pod);
          return undefined;
        }
        const start = () => {
          if (pod.metadata.deletionTimestamp)
            workers.update({ pod, kind: 'kill', gracePeriodSeconds: gracePeriodOf(pod) });
          else workers.update({ pod, kind: op === 'ADD' ? 'create' : 'update' });
        };
        if (!isNew || !this.deps.admit || pod.metadata.deletionTimestamp) {
          start();
          return undefined;
        }
        const r = this.deps.admit(pod, this.admitted(uid));
        if (!(r instanceof Promise)) {
          if (this.recordAdmission(pod, r)) start();
          return undefined;
        }
        return r
          .catch((err: unknown): AdmitResult => ({ admit: false, ...unexpectedAdmissionError(messageOf(err)) }))
          .then((result) => {
            // Removed while it waited: the REMOVE held in the backlog stops it next.
            if (this.recordAdmission(pod, result)) start();
          });
      }
      case 'REMOVE':
        podManager.remove(pod);
        if (this.inactive.delete(uid)) return undefined;
        workers.update({ pod, kind: 'kill' });
        return undefined;
      case 'RECONCILE':
        podManager.addOrUpdate(pod);
        return undefined;
    }
  }

  /** True when admission admitted the pod; a refusal is recorded and the pod never runs. */
  private recordAdmission(pod: Pod, r: AdmitResult): boolean {
    if (r.admit) return true;
    this.inactive.add(pod.metadata.uid!);
    this.deps.logger.warn(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, reason: r.reason },
      `pod rejected: ${r.message}`,
    );
    this.deps.onRejected?.(pod, r.reason, r.message);
    return false;
  }

  private syncPod(uid: string): void {
    const pod: Pod | undefined = this.deps.podManager.getPodByUid(uid);
    if (pod) this.deps.workers.update({ pod, kind: 'sync' });
  }

  /** Starts the loop. */
  start({ signal }: { signal: AbortSignal }): void {
    this.deps.logger.info('Starting kubelet main sync loop');
    this.deps.podConfig.onUpdate((u) => this.handle(u));
    this.deps.pleg.onEvent((e) => this.syncPod(e.uid));
    const tick = () => {
      if (signal.aborted) return;
      this.lastIterationMs = this.deps.clock.monotonic();
      for (const uid of this.deps.workQueue.takeReady()) this.syncPod(uid);
      this.deps.clock.setTimer(tick, 1000);
    };
    let housekeeping = false;
    const house = async () => {
      if (signal.aborted) return;
      if (!housekeeping && this.deps.podConfig.allSourcesSeen()) {
        housekeeping = true;
        try {
          await this.deps.housekeeping();
        } catch (err) {
          this.deps.logger.warn({ err: messageOf(err) }, 'housekeeping failed');
        }
        housekeeping = false;
      }
      this.deps.clock.setTimer(() => void house(), 2000);
    };
    tick();
    void house();
  }
}
