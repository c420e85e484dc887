/**
 * A token bucket, as client-go's flowcontrol limiter: `burst` tokens to start with, refilled at
 * `qps` per second up to `burst`. A qps of 0 or less means no limit (upstream's convention for
 * eventRecordQPS, registryPullQPS and kubeAPIQPS). Beside it, the semaphore that bounds concurrent
 * work (image pulls, the runtime's lifecycle calls).
 */
import { type Clock, realClock } from './clock.js';

export class TokenBucket {
  private tokens: number;
  private last = 0;

  /** `now`: a monotonic clock in ms (a Clock's `monotonic`), as client-go's limiter reads time.Now's monotonic part. */
  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number = realClock.monotonic,
  ) {
    this.tokens = burst;
  }

  private refill(): number {
    const now = this.now();
    // Never less than nothing: a wall clock stepped back an hour made the bucket owe an hour of tokens (every request
    // through the apiserver client waited an hour) when it was read as `now`.
    if (this.last) this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.last) / 1000) * this.qps);
    this.last = now;
    return now;
  }

  /** Takes a token if one is there (upstream TryAccept): false means over the limit. */
  tryTake(): boolean {
    if (this.qps <= 0) return true;
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Reserves the next token and says how many milliseconds to wait for it (0: at once), as
   * client-go's Wait does: callers queue in the order they reserved. A burst of 0 still lets one
   * request through per 1/qps seconds, where client-go's would wait forever.
   */
  reserve(): number {
    if (this.qps <= 0) return 0;
    this.refill();
    this.tokens -= 1;
    return this.tokens < 0 ? Math.ceil((-this.tokens / this.qps) * 1000) : 0;
  }
}

/**
 * At most `limit` tasks at a time; the rest wait in order (limit 0 or less: no limit). With
 * `priorities`, a freed slot goes to the waiter of the highest priority (in order within one).
 * With `holdMs`, a task that has held its slot that long gives it up and runs on unbounded, so
 * tasks that hang delay the others by `holdMs` at most, never stop them.
 */
export class Semaphore {
  private running = 0;
  /** Waiters by priority, the highest last. */
  private readonly waiting: (() => void)[][];

  constructor(
    private readonly limit: number,
    private readonly o: { priorities?: number; holdMs?: number; clock?: Clock } = {},
  ) {
    this.waiting = Array.from({ length: Math.max(1, o.priorities ?? 1) }, () => []);
  }

  /** Tasks holding a slot and tasks waiting for one. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.reduce((n, q) => n + q.length, 0) };
  }

  /**
   * Runs `task` once a slot is free. `signal` aborted before or while it waits: it leaves the queue at once
   * (rejecting with the signal's reason) and never runs, so a queue of abandoned tasks holds
   * nothing. `priority`: from 0 (the default, lowest) to priorities − 1.
   */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal, priority = 0): Promise<T> {
    if (signal?.aborted) throw signal.reason as Error;
    if (this.limit <= 0) return task();
    if (this.running >= this.limit) await this.turn(this.waiting[priority] ?? this.waiting[0], signal);
    else this.running++;
    let holding = true;
    const release = () => {
      if (!holding) return;
      holding = false;
      cancelHold?.();
      this.handOn();
    };
    const cancelHold =
      this.o.holdMs === undefined ? undefined : (this.o.clock ?? realClock).setTimer(release, this.o.holdMs);
    try {
      return await task();
    } finally {
      release();
    }
  }

  /** A freed slot passes straight to the next waiter (running stays the same), else back to the pool. */
  private handOn(): void {
    for (let p = this.waiting.length - 1; p >= 0; p--) {
      const next = this.waiting[p].shift();
      if (next) return next();
    }
    this.running--;
  }

  /** Resolves when a slot passes to this waiter; rejects (and leaves the queue) if `signal` aborts first. */
  private turn(queue: (() => void)[], signal?: AbortSignal): Promise<void> {
    // (run has refused an aborted signal already, and nothing ran in between)
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = queue.indexOf(go);
        if (i >= 0) queue.splice(i, 1);
        reject(signal!.reason as Error);
      };
      const go = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      queue.push(go);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
