/**
 * Crash-loop backoff (upstream flowcontrol.Backoff as the kubelet uses it): per key, the delay
 * starts at 10 s and doubles to 5 min; a container that ran for more than 2×max (10 min) since the
 * last update starts over. The decision functions are pure over an entry; the table is the only
 * state and is written by the executor alone.
 */

/** One key's backoff state. */
export interface BackoffEntry {
  delayMs: number;
  lastUpdateMs: number;
}

/** Backoff parameters. */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/** The kubelet's container restart policy: 10 s → 5 min. */
export const containerBackoffPolicy: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000 };

/**
 * The restart policy with crashLoopBackOff.maxContainerRestartPeriod as its cap; a cap below the
 * initial 10 s is also the initial delay (a constant interval), as upstream.
 */
export function containerBackoffPolicyWith(maxContainerRestartPeriodMs: number | undefined): BackoffPolicy {
  if (maxContainerRestartPeriodMs === undefined) return containerBackoffPolicy;
  return {
    initialMs: Math.min(containerBackoffPolicy.initialMs, maxContainerRestartPeriodMs),
    maxMs: maxContainerRestartPeriodMs,
  };
}

function expired(eventMs: number, entry: BackoffEntry, p: BackoffPolicy): boolean {
  return eventMs - entry.lastUpdateMs > 2 * p.maxMs;
}

/**
 * Milliseconds left in backoff for an event (container finish) at `eventMs`; 0 when not in backoff. Both times are
 * wall times (the event is the runtime's). An event after now means the wall clock was stepped back since: the time
 * waited cannot be told, and none is left (upstream's negative time.Since holds the restart until the wall clock has
 * caught up, an hour for an hour's step).
 */
export function backoffRemaining(
  entry: BackoffEntry | undefined,
  eventMs: number,
  nowMs: number,
  p = containerBackoffPolicy,
): number {
  if (!entry || expired(eventMs, entry, p) || nowMs < eventMs) return 0;
  return Math.max(0, entry.delayMs - (nowMs - eventMs));
}

/** The entry after one more restart at `nowMs` for an event at `eventMs`. */
export function nextBackoff(
  entry: BackoffEntry | undefined,
  eventMs: number,
  nowMs: number,
  p = containerBackoffPolicy,
): BackoffEntry {
  if (!entry || expired(eventMs, entry, p)) return { delayMs: p.initialMs, lastUpdateMs: nowMs };
  return { delayMs: Math.min(entry.delayMs * 2, p.maxMs), lastUpdateMs: nowMs };
}

/** The backoff table, keyed by pod UID + container name + spec hash. */
export class BackoffTable {
  private readonly entries = new Map<string, BackoffEntry>();
  constructor(private readonly policy = containerBackoffPolicy) {}
  /** A read-only view for decisions. */
  snapshot(): ReadonlyMap<string, BackoffEntry> {
    return this.entries;
  }
  /** Records a restart. */
  next(key: string, eventMs: number, nowMs: number): void {
    this.entries.set(key, nextBackoff(this.entries.get(key), eventMs, nowMs, this.policy));
  }
  /** Drops entries of a pod (on removal). */
  forgetPod(uid: string): void {
    for (const k of [...this.entries.keys()]) if (k.startsWith(`${uid}/`)) this.entries.delete(k);
  }
  /** Drops entries not updated for 2×max (garbage collection). */
  gc(nowMs: number): void {
    for (const [k, e] of this.entries) if (nowMs - e.lastUpdateMs > 2 * this.policy.maxMs) this.entries.delete(k);
  }
}

/** The backoff key of a container. */
export function backoffKey(uid: string, containerName: string, hash: string): string {
  return `${uid}/${containerName}/${hash}`;
}
