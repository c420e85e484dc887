/**
 * Time as a dependency. Components read `now()` and schedule with `setTimer` through a Clock so
 * tests can drive time; production uses `realClock`.
 */

/** A cancel function returned by `setTimer`. */
export type CancelTimer = () => void;

/**
 * Source of time and timers. `now` never blocks; timers fire at most once. As Go's time.Now, which carries a wall
 * and a monotonic reading: `now` is the wall clock, for timestamps and for comparing with other wall times (a
 * container's start, a certificate's expiry); `monotonic` only moves forward, whatever NTP or an operator does to
 * the wall clock, for the kubelet's own waits and intervals (a due time, a backoff, the time since a relist).
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Milliseconds since an arbitrary origin, never stepped. */
  monotonic(): number;
  /** Runs `fn` after `ms` milliseconds unless cancelled. */
  setTimer(fn: () => void, ms: number): CancelTimer;
}

/** The longest delay a Node timer takes (a longer one fires at once, with a TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs `fn` after `ms`, however long (re-armed in steps a timer can take, measured on the monotonic clock as the
 * timers themselves are); returns the cancel.
 */
export function longTimeout(fn: () => void, ms: number, o: { unref?: boolean } = {}): () => void {
  const end = performance.now() + ms;
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = end - performance.now();
    timer = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
    if (o.unref) timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/** The wall clock; its timers take any delay (a deadline days away) and never hold the process. */
export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer: (fn, ms) => longTimeout(fn, ms, { unref: true }),
};

/** Resolves after `ms` or when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      cancel();
      resolve();
    };
    const cancel = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A clock whose time moves only when a test calls `advance`. */
export class FakeClock implements Clock {
  private t: number;
  /** How far the wall clock was stepped away from the monotonic one (stepWall). */
  private wallOffset = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private seq = 0;
  constructor(start = Date.UTC(2025, 0, 1)) {
    this.t = start;
  }
  now(): number {
    return this.t + this.wallOffset;
  }
  monotonic(): number {
    return this.t;
  }
  /** Steps the wall clock by `ms` (either way), as NTP or `date -s` do: the monotonic clock and timers do not move. */
  stepWall(ms: number): void {
    this.wallOffset += ms;
  }
  setTimer(fn: () => void, ms: number): CancelTimer {
    const id = ++this.seq;
    this.timers.push({ at: this.t + Math.max(0, ms), fn, id });
    return () => {
      this.timers = this.timers.filter((x) => x.id !== id);
    };
  }
  /** Moves time forward by `ms`, firing due timers in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
  }
}
