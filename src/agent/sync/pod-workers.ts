/**
 * Pod workers: one serial worker per pod UID. Updates are coalesced (the latest wins) and
 * processed one at a time. Each pod moves through one lifecycle:
 *
 *      update(create/update/sync)                kill, or sync says terminal
 *   ┌──────────────┐   ──────────────────────────────►  ┌─────────────┐   stopped   ┌────────────┐
 *   │    sync      │                                    │ terminating │ ──────────► │ terminated │
 *   └──────────────┘   ◄── (never goes back) ─────────  └─────────────┘             └────────────┘
 *
 * `sync` runs the pod; `terminating` stops its containers with the grace period; `terminated`
 * releases what it holds, and the worker is `finished` once that succeeded. As upstream:
 *  - a static pod starts only when no other static pod of its full name is started and not
 *    finished (static-pod-starts.ts); one killed before it could start finishes at once;
 *  - a pod created again with the same UID while it terminates (a static pod's manifest removed
 *    and put back) is marked `restartRequested`: housekeeping forgets its worker once finished
 *    and starts it anew (`syncKnownPods`);
 *  - a critical pod admitted by preemption starts once its victims are stopped (start-gates.ts).
 * A step that fails (the runtime is down, a call times out) is tried again after upstream's worker
 * back-off (10 s, up to half again of jitter: `workerBackOffPeriod`), whatever else happens to the
 * pod meanwhile: a pod deleted while the runtime was away gets no other update that would retry
 * its stop, and a new pod no PLEG event.
 * A worker is forgotten (`forget`) after it is terminated and its pod removed.
 */
import { podFullName, type Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import { realClock, type CancelTimer, type Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { isStaticPod } from '../podconfig/types.js';
import { StaticPodStarts } from './static-pod-starts.js';
import { StartGates, stopTimeoutMs } from './start-gates.js';
import type { PodSyncer, WorkerState, WorkUpdate } from './pod-worker-types.js';

export type { PodSyncer, SyncUpdateType, WorkerState, WorkUpdate } from './pod-worker-types.js';

/** How long a dropped worker's UID is remembered (its successor's first sync waits for lists newer than the drop). */
const FORGOTTEN_MS = 10_000;

/** Upstream workerBackOffPeriod and workerBackOffJitterFactor: a failed step is retried after 10–15 s. */
export const WORKER_BACKOFF_MS = 10_000;
const WORKER_BACKOFF_JITTER = 0.5;

/** The delay before a failed step is tried again, for `random` in [0, 1) (wait.Jitter). Pure. */
export function workerRetryDelayMs(random: number): number {
  return WORKER_BACKOFF_MS * (1 + WORKER_BACKOFF_JITTER * random);
}

interface Worker {
  pod: Pod;
  terminatingAt?: number;
  terminatedAt?: number;
  /** When the terminated step succeeded (upstream `finished`): the pod holds nothing any more. */
  finishedAt?: number;
  /** Let start (a static pod waits for the one before it of the same full name). */
  started: boolean;
  /** Created again with the same UID while terminating: to be started anew once finished. */
  restartRequested: boolean;
  grace?: number;
  pending?: WorkUpdate;
  busy: boolean;
  /** When the worker's last sync ended, failed or not (monotonic ms); undefined before its first. */
  syncEndedAtMs?: number;
  /** Cancels the retry scheduled after a failed step, while one is. */
  cancelRetry?: CancelTimer;
}

/** Derives a worker's state from its timestamps (the one place that decides it). */
function stateOf(w: Worker): WorkerState {
  if (w.terminatedAt !== undefined) return 'terminated';
  if (w.terminatingAt !== undefined) return 'terminating';
  return 'sync';
}

/** The pod workers. */
export class PodWorkers {
  private readonly workers = new Map<string, Worker>();
  private idleWaiters: (() => void)[] = [];
  private busyCount = 0;
  /**
   * When each UID's worker was dropped (monotonic ms), for the last FORGOTTEN_MS. A new worker's
   * pod has had nothing done for it since then — another worker for the same UID only goes once
   * it has finished — and a UID no worker had (a new pod) has had nothing done for it at all.
   */
  private readonly forgottenAt = new Map<string, number>();
  private readonly staticStarts = new StaticPodStarts();
  private readonly gates = new StartGates();

  private readonly setTimer: Clock['setTimer'];

  /**
   * `now`: the clock's monotonic time (the workers' times are waits, never timestamps);
   * `onStopped`: a pod's containers were stopped for good (its worker turned terminated);
   * `setTimer`: schedules the retries of failed steps (the real clock's when absent).
   */
  constructor(
    private readonly deps: {
      syncer: PodSyncer;
      logger: Logger;
      now: () => number;
      onStopped?: (uid: string) => void;
      setTimer?: Clock['setTimer'];
    },
  ) {
    this.setTimer = deps.setTimer ?? realClock.setTimer;
  }

  /** Queues work for a pod; never blocks. */
  update(u: WorkUpdate): void {
    const uid = u.pod.metadata.uid!;
    let w = this.workers.get(uid);
    if (!w) {
      w = { pod: u.pod, busy: false, started: false, restartRequested: false };
      this.workers.set(uid, w);
      if (isStaticPod(u.pod)) this.staticStarts.enqueue(podFullName(u.pod), uid);
    } else if (w.terminatingAt !== undefined && u.kind === 'create') {
      w.restartRequested = true;
      this.deps.logger.debug(
        { pod: podRefOf(u.pod), uid },
        'Pod is terminating but has been requested to restart with same UID, will be reconciled later',
      );
      return;
    }
    if (stateOf(w) === 'terminated' && u.kind !== 'kill') return;
    if (u.kind === 'kill' && w.terminatingAt === undefined) {
      w.terminatingAt = this.deps.now();
      w.grace = u.gracePeriodSeconds;
    }
    if (u.kind !== 'kill' || !w.pending) w.pending = u;
    w.pending = { ...w.pending, pod: u.pod };
    void this.run(uid, w);
  }

  /**
   * A pod first seen already Succeeded or Failed in the apiserver (a kubelet restart) starts
   * terminated, as upstream: it holds nothing for admission and its release runs at once.
   */
  adoptTerminated(pod: Pod): void {
    const uid = pod.metadata.uid!;
    if (this.workers.has(uid)) return;
    const now = this.deps.now();
    const w: Worker = {
      pod,
      busy: false,
      started: true,
      restartRequested: false,
      terminatingAt: now,
      terminatedAt: now,
      pending: { pod, kind: 'kill' },
    };
    this.workers.set(uid, w);
    void this.run(uid, w);
  }

  private async run(uid: string, w: Worker): Promise<void> {
    if (w.busy) return;
    w.busy = true;
    this.busyCount++;
    try {
      while (w.pending) {
        const u = w.pending;
        w.pending = undefined;
        w.pod = u.pod;
        if (!w.started) {
          const start = this.mayStart(uid, w);
          if (start === 'wait') {
            w.pending = u;
            break;
          }
          if (start === 'never') continue;
        }
        try {
          const state = stateOf(w);
          if (state === 'sync') {
            const quiet = { quietSinceMs: w.syncEndedAtMs ?? this.forgottenAt.get(uid) ?? 0 };
            let r;
            try {
              r = await this.deps.syncer.syncPod(w.pod, quiet, u.kind === 'kill' ? 'sync' : u.kind);
            } finally {
              w.syncEndedAtMs = performance.now();
            }
            if (r.terminal && w.terminatingAt === undefined) {
              w.terminatingAt = this.deps.now();
              w.pending ??= { pod: w.pod, kind: 'sync' };
            }
          } else if (state === 'terminating') {
            await this.deps.syncer.syncTerminatingPod(w.pod, w.grace);
            w.terminatedAt = this.deps.now();
            this.deps.onStopped?.(uid);
            for (const next of this.gates.waitingOn(uid)) this.wake(next);
            await this.deps.syncer.syncTerminatedPod(w.pod);
            this.finish(uid, w);
          } else {
            // Terminated and killed again (removed from its source), or its release retried.
            await this.deps.syncer.syncTerminatedPod(w.pod);
            this.finish(uid, w);
          }
        } catch (err) {
          const delayMs = workerRetryDelayMs(Math.random());
          this.deps.logger.error(
            { pod: podRefOf(w.pod), err: messageOf(err), retryAfter: `${Math.round(delayMs / 1000)}s` },
            'Error syncing pod, skipping',
          );
          this.retryLater(uid, w, u.kind === 'kill' ? 'kill' : 'sync', delayMs);
        }
      }
    } finally {
      w.busy = false;
      if (--this.busyCount === 0) {
        const ws = this.idleWaiters;
        this.idleWaiters = [];
        for (const f of ws) f();
      }
    }
  }

  /** Runs the worker again after `delayMs` (one retry pending at a time) unless it has finished or been forgotten. */
  private retryLater(uid: string, w: Worker, kind: 'sync' | 'kill', delayMs: number): void {
    if (w.cancelRetry) return;
    w.cancelRetry = this.setTimer(() => {
      w.cancelRetry = undefined;
      if (this.workers.get(uid) !== w || w.finishedAt !== undefined) return;
      w.pending ??= kind === 'kill' ? { pod: w.pod, kind, gracePeriodSeconds: w.grace } : { pod: w.pod, kind };
      void this.run(uid, w);
    }, delayMs);
  }

  /**
   * Whether the worker may run its pod: `start` (and it is marked started), `wait` (a static pod
   * whose full name another pod holds: tried again when that one finishes), or `never` (a static
   * pod killed before it started: it ran nothing, so it is finished at once).
   */
  private mayStart(uid: string, w: Worker): 'start' | 'wait' | 'never' {
    if (
      !this.gates.open(
        uid,
        (v) => this.workers.get(v)?.terminatedAt !== undefined || !this.workers.has(v),
        this.deps.now(),
      )
    )
      return 'wait';
    if (isStaticPod(w.pod)) {
      if (w.terminatingAt !== undefined) {
        w.terminatedAt = w.finishedAt = this.deps.now();
        this.releaseName(uid, w);
        return 'never';
      }
      const live = (other: string) => this.workers.get(other)?.terminatingAt === undefined;
      if (!this.staticStarts.allow(podFullName(w.pod), uid, live)) {
        this.deps.logger.debug(
          { pod: podRefOf(w.pod), uid },
          'Pod cannot start yet: another static pod with the same full name has not finished',
        );
        return 'wait';
      }
    }
    w.started = true;
    return 'start';
  }

  /** Marks the terminated step done and lets the next static pod of the same name start. */
  private finish(uid: string, w: Worker): void {
    w.finishedAt ??= this.deps.now();
    this.releaseName(uid, w);
  }

  private releaseName(uid: string, w: Worker): void {
    if (isStaticPod(w.pod)) for (const next of this.staticStarts.release(podFullName(w.pod), uid)) this.wake(next);
  }

  /** Runs a worker that waits to start (its pending update), unless it is running. */
  private wake(uid: string): void {
    const n = this.workers.get(uid);
    if (n?.pending && !n.busy) void this.run(uid, n);
  }

  /**
   * Holds the start of pod `uid` (admitted by preempting `victims`) until they are stopped, or
   * each one's grace period and half again has passed (upstream killPodNow); `late` is told of
   * the victims still running then.
   */
  startAfterStopped(uid: string, victims: Pod[], late: (victims: string[]) => void): void {
    const timeoutMs = Math.max(...victims.map((v) => stopTimeoutMs(v.spec.terminationGracePeriodSeconds ?? 30)));
    const ids = victims.map((v) => v.metadata.uid!);
    this.gates.hold(uid, ids, { nowMs: this.deps.now(), timeoutMs, wake: () => this.wake(uid), late });
  }

  /**
   * Upstream SyncKnownPods: forgets each worker whose pod is terminated and no longer desired, or
   * finished with a restart requested (housekeeping then starts it anew), and tries again the
   * release of a desired pod whose terminated step failed.
   */
  syncKnownPods(isDesired: (uid: string) => boolean): void {
    for (const [uid, w] of this.workers) {
      if (stateOf(w) !== 'terminated' || w.busy) continue;
      if (!isDesired(uid) || (w.restartRequested && w.finishedAt !== undefined)) this.forget(uid);
      else if (w.finishedAt === undefined && !w.pending) {
        w.pending = { pod: w.pod, kind: 'kill' };
        void this.run(uid, w);
      }
    }
  }

  /** The state of a pod's worker, if it has one. */
  stateOf(uid: string): WorkerState | undefined {
    const w = this.workers.get(uid);
    return w ? stateOf(w) : undefined;
  }

  /**
   * True while the started static pod of `fullName` stops its containers: its mirror pod stays
   * until then (upstream IsPodForMirrorPodTerminatingByFullName).
   */
  isStaticPodTerminating(fullName: string): boolean {
    const uid = this.staticStarts.holder(fullName);
    const w = uid === undefined ? undefined : this.workers.get(uid);
    return !!w && stateOf(w) === 'terminating';
  }

  /** True once the pod's terminated step succeeded: nothing of it is left to release (the final DELETE may go). */
  isFinished(uid: string): boolean {
    return this.workers.get(uid)?.finishedAt !== undefined;
  }

  /** The pod a worker holds (its last update's): still there for a pod the pod manager let go while it terminates. */
  podOf(uid: string): Pod | undefined {
    return this.workers.get(uid)?.pod;
  }

  /** Every worker's pod and lifecycle state (the pod count metrics). */
  states(): { uid: string; state: WorkerState; pod: Pod }[] {
    return [...this.workers].map(([uid, w]) => ({ uid, state: stateOf(w), pod: w.pod }));
  }

  /** UIDs with a worker. */
  uids(): string[] {
    return [...this.workers.keys()];
  }

  /** Drops a terminated pod's worker. */
  forget(uid: string): void {
    const w = this.workers.get(uid);
    if (w && stateOf(w) === 'terminated' && !w.busy) {
      w.cancelRetry?.();
      this.workers.delete(uid);
      this.releaseName(uid, w);
      const now = performance.now();
      // The PLEG lists every second: a drop older than this precedes every list a new worker reads.
      for (const [old, at] of this.forgottenAt) if (at < now - FORGOTTEN_MS) this.forgottenAt.delete(old);
      this.forgottenAt.set(uid, now);
    }
  }

  /** Resolves when no worker is busy (tests, shutdown). */
  whenIdle(): Promise<void> {
    if (this.busyCount === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }
}

const podRefOf = (pod: Pod) => `${pod.metadata.namespace}/${pod.metadata.name}`;
