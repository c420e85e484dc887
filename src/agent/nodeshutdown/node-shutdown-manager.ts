/**
 * Graceful node shutdown (upstream nodeshutdown, Linux with systemd-logind), on when `shutdownGracePeriod` or
 * `shutdownGracePeriodByPodPriority` asks for time:
 *
 * 1. At start, logind's InhibitDelayMaxSec is raised to the time the groups need when it is shorter (the kubelet's
 *    override file, then logind reloaded and read again, up to five times), PrepareForShutdown is followed and a
 *    delay lock on shutdown is taken. A failure is logged and the kubelet runs on without it, as upstream.
 * 2. On PrepareForShutdown(true): a NodeShutdown event, the node NotReady ("node is shutting down") and no new pod
 *    admitted (NodeShutdown); the active pods are killed group by group, lowest priority first, each with at most its
 *    group's grace period, their status Failed / Terminated with a DisruptionTarget condition; the start and end go to
 *    `graceful_node_shutdown_state` and the graceful-shutdown gauges; then the lock is released and the node powers
 *    off.
 * 3. On PrepareForShutdown(false) (the shutdown was cancelled): the node is ready again and the lock is taken anew.
 *
 * When the watch ends (logind or the bus restarted) it is set up again a second later.
 */
import type { Pod } from '../../api/types.js';
import { sleep, type Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { AdmitResult } from '../admission/predicate.js';
import type { EventSink } from '../events/recorder.js';
import type { ObjectRef } from '../events/event.js';
import { groupIndex, type ShutdownGroup } from '../runtime/shutdown-groups.js';
import type { InhibitLock, Logind, ShutdownWatch } from './logind.js';
import type { ShutdownState, ShutdownStateFile } from './shutdown-state.js';

/** Upstream's status of a pod killed for a node shutdown. */
export const NODE_SHUTDOWN_REASON = 'Terminated';
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
/** Upstream's admission refusal while the node shuts down. */
export const NODE_SHUTDOWN_NOT_ADMITTED = {
  reason: 'NodeShutdown',
  message: 'Pod was rejected as the node is shutting down.',
} as const;
/** The node's readiness error while it shuts down. */
export const NODE_SHUTTING_DOWN = 'node is shutting down';
/** Upstream's wait before the watch is set up again. */
const RECONNECT_MS = 1000;
/** How often a group's pods are checked for having stopped. */
const STOPPED_POLL_MS = 100;
/** Upstream's backoff while logind takes up the override: 100 ms, doubling, five reads. */
const OVERRIDE_READS = 5;
const OVERRIDE_FIRST_WAIT_MS = 100;

/** What the manager needs. */
export interface NodeShutdownDeps {
  /** The shutdown groups, lowest priority first (shutdownGroups; never empty here). */
  groups: readonly ShutdownGroup[];
  logind: Logind;
  /** The pods the kubelet runs (upstream GetActivePods). */
  activePods(): Pod[];
  /** Kills `pod` with at most `graceSeconds`, its status Failed with `reason` and `message` and a DisruptionTarget. */
  killPod(pod: Pod, graceSeconds: number, verdict: { reason: string; message: string }): void;
  /** Whether the pod is stopped and its volumes released (its worker's terminated step done). */
  stopped(uid: string): boolean;
  /** Reports the node status now (the Ready condition). */
  syncNodeStatus(): void;
  events: EventSink;
  node: ObjectRef;
  /** The state file and the gauges (GracefulNodeShutdownBasedOnPodPriority); absent: neither is kept. */
  record?: {
    state: ShutdownStateFile;
    startTime(seconds: number): void;
    endTime(seconds: number): void;
  };
  clock: Clock;
  logger: Logger;
}

/** Go's Duration.String() for whole seconds and milliseconds ("30s", "1m0s", "0s"), as upstream's messages print. */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const seconds = ms / 1000;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Number((seconds % 60).toFixed(3));
  return h ? `${h}h${m}m${s}s` : m ? `${m}m${s}s` : `${s}s`;
}

/** The pods of each group (pure): a pod goes to the highest group at or below its priority, else the lowest. */
export function podsByGroup(groups: readonly ShutdownGroup[], pods: readonly Pod[]): Pod[][] {
  const out: Pod[][] = groups.map(() => []);
  for (const pod of pods) out[groupIndex(groups, (pod.spec.priority as number | undefined) ?? 0)].push(pod);
  return out;
}

/** A pod's grace period in `group` (pure): the group's, or the pod's own when that is shorter. */
export function groupGraceSeconds(pod: Pod, group: ShutdownGroup): number {
  const own = pod.spec.terminationGracePeriodSeconds;
  return own !== undefined && own !== null && own <= group.graceSeconds ? own : group.graceSeconds;
}

export class NodeShutdownManager {
  private shuttingDown = false;
  private lock?: InhibitLock;
  /** Set when the kubelet stops: a lock taken from then on is released at once. */
  private stopped = false;

  constructor(private readonly deps: NodeShutdownDeps) {}

  /** "node is shutting down" while it does (the node's Ready condition), else undefined. */
  shutdownStatus(): string | undefined {
    return this.shuttingDown ? NODE_SHUTTING_DOWN : undefined;
  }

  /** Upstream's admit handler: no pod while the node shuts down. */
  admit(): AdmitResult | undefined {
    return this.shuttingDown ? { admit: false, ...NODE_SHUTDOWN_NOT_ADMITTED } : undefined;
  }

  /** The time the groups ask logind for (upstream periodRequested). */
  periodRequestedMs(): number {
    return this.deps.groups.reduce((sum, g) => sum + g.graceSeconds, 0) * 1000;
  }

  /**
   * Sets up the watch (an error when that fails: the caller logs it and runs on), then keeps it up until `signal`
   * aborts; reports the last shutdown's times from the state file.
   */
  async start(signal: AbortSignal): Promise<void> {
    const stop = () => {
      this.stopped = true;
      this.releaseLock();
    };
    if (signal.aborted) stop();
    signal.addEventListener('abort', stop, { once: true });
    const first = await this.watch();
    if (signal.aborted) return first.stop();
    void this.rewatch(first, signal);
    await this.reportLastShutdown();
  }

  /** Follows `watch` until it ends, then sets up another a second later, until `signal` aborts. */
  private async rewatch(watch: ShutdownWatch, signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.deps;
    let current: ShutdownWatch | undefined = watch;
    while (!signal.aborted) {
      if (current) {
        const stop = current.stop;
        signal.addEventListener('abort', stop, { once: true });
        await current.ended;
        signal.removeEventListener('abort', stop);
        current = undefined;
        if (signal.aborted) return;
        logger.error({}, 'Ended to watching the node for shutdown events');
      }
      await sleep(RECONNECT_MS, signal, clock);
      if (signal.aborted) return;
      logger.info({}, 'Restarting watch for node shutdown events');
      try {
        current = await this.watch();
        if (signal.aborted) current.stop();
      } catch (err) {
        logger.error({ err: messageOf(err) }, 'Unable to watch the node for shutdown events');
      }
    }
  }

  /** Upstream startWatching: the inhibit delay, the lock, the signal. */
  private async watch(): Promise<ShutdownWatch> {
    const { logind } = this.deps;
    const requested = this.periodRequestedMs();
    if (requested > (await logind.inhibitDelayMs())) {
      try {
        await logind.overrideInhibitDelay(requested);
      } catch (err) {
        throw new Error(`unable to override inhibit delay by shutdown manager: ${messageOf(err)}`, { cause: err });
      }
      await logind.reloadConfig();
      // logind reads its configuration after the reload call returns: read it again, backing off.
      let updated = 0;
      let attempt = 0;
      for (let waitMs = OVERRIDE_FIRST_WAIT_MS; attempt < OVERRIDE_READS; waitMs *= 2) {
        attempt++;
        updated = await logind.inhibitDelayMs();
        if (requested <= updated) break;
        if (attempt < OVERRIDE_READS) await sleep(waitMs, undefined, this.deps.clock);
      }
      if (requested > updated)
        throw new Error(
          `node shutdown manager was timed out after ${attempt} attempts waiting for logind InhibitDelayMaxSec to update to ${goDuration(requested)} (ShutdownGracePeriod), current value is ${goDuration(updated)}`,
        );
    }
    // Following the signal before the lock is taken: a shutdown that starts while the lock is held must be seen, or
    // logind waits out the whole delay with no pod stopped (upstream subscribes after, with that window).
    const watch = await logind.watchShutdown((shuttingDown) => void this.onEvent(shuttingDown));
    try {
      await this.acquireLock();
    } catch (err) {
      watch.stop();
      throw err;
    }
    return watch;
  }

  private async acquireLock(): Promise<void> {
    const lock = await this.deps.logind.inhibitShutdown();
    this.lock?.release();
    this.lock = lock;
    // A lock that was being taken as the kubelet stopped must not outlive it.
    if (this.stopped) this.releaseLock();
  }

  private releaseLock(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  private async onEvent(shuttingDown: boolean): Promise<void> {
    const { events, node, logger } = this.deps;
    logger.info({ event: shuttingDown ? 'shutdown' : 'cancelled' }, 'Shutdown manager detected new shutdown event');
    events.record(
      node,
      'Normal',
      'NodeShutdown',
      shuttingDown ? 'Shutdown manager detected shutdown event' : 'Shutdown manager detected shutdown cancellation',
    );
    this.shuttingDown = shuttingDown;
    if (!shuttingDown) {
      this.deps.syncNodeStatus();
      await this.acquireLock().catch((err: unknown) =>
        logger.error({ err: messageOf(err) }, 'Shutdown manager could not take the inhibitor lock again'),
      );
      return;
    }
    this.deps.syncNodeStatus();
    try {
      await this.processShutdown();
    } catch (err) {
      logger.error({ err: messageOf(err) }, 'Shutdown manager failed to process shutdown event');
    } finally {
      this.releaseLock();
      logger.info({}, 'Shutdown manager completed processing shutdown event, node will shutdown shortly');
    }
  }

  /** Kills the active pods group by group and records the shutdown's start and end. */
  private async processShutdown(): Promise<void> {
    const { record, clock } = this.deps;
    const active = this.deps.activePods();
    const startMs = clock.now();
    if (record) {
      await this.storeState(record.state, { startMs });
      record.startTime(startMs / 1000);
      record.endTime(0);
    }
    try {
      const byGroup = podsByGroup(this.deps.groups, active);
      for (const [index, group] of this.deps.groups.entries()) {
        const pods = byGroup[index];
        if (pods.length) await this.killGroup(group, pods);
      }
    } finally {
      if (record) {
        const endMs = clock.now();
        await this.storeState(record.state, { startMs, endMs });
        record.endTime(endMs / 1000);
      }
    }
  }

  /** Kills a group's pods together; returns when all stopped or the group's grace period is over. */
  private async killGroup(group: ShutdownGroup, pods: Pod[]): Promise<void> {
    const { clock, logger } = this.deps;
    for (const pod of pods) {
      const grace = groupGraceSeconds(pod, group);
      logger.info(
        { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, gracePeriod: grace },
        'Shutdown manager killing pod with gracePeriod',
      );
      this.deps.killPod(pod, grace, { reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_MESSAGE });
    }
    // A wait: on the monotonic clock (a wall clock stepped back during the shutdown does not stretch it).
    const deadline = clock.monotonic() + group.graceSeconds * 1000;
    while (pods.some((p) => !this.deps.stopped(p.metadata.uid!))) {
      if (clock.monotonic() >= deadline) {
        logger.info(
          { gracePeriod: group.graceSeconds, priority: group.priority },
          'Shutdown manager pod killing time out',
        );
        return;
      }
      await sleep(STOPPED_POLL_MS, undefined, clock);
    }
  }

  /** Records the shutdown's times in the state file; a failure is logged (the shutdown goes on). */
  private storeState(file: ShutdownStateFile, state: ShutdownState): Promise<void> {
    return file
      .store(state)
      .catch((err: unknown) =>
        this.deps.logger.error({ err: messageOf(err) }, 'Failed to store graceful shutdown state'),
      );
  }

  /** Upstream setMetrics: the last shutdown's start and end from the state file. */
  private async reportLastShutdown(): Promise<void> {
    const { record, logger } = this.deps;
    if (!record) return;
    try {
      const state = await record.state.load();
      if (state.startMs !== undefined) record.startTime(state.startMs / 1000);
      if (state.endMs !== undefined) record.endTime(state.endMs / 1000);
    } catch (err) {
      logger.error({ err: messageOf(err) }, 'Failed to load graceful shutdown state');
    }
  }
}
