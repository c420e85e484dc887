/**
 * A token bucket, as client-go's flowcontrol limiter: `burst` tokens to start with, refilled at
 * `qps` per second up to `burst`. A qps of 0 or less means no limit (upstream's convention for
 * eventRecordQPS, registryPullQPS and kubeAPIQPS).
 */
export class TokenBucket {
  private tokens: number;
  private last = 0;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
  }

  private refill(): number {
    const now = this.now();
    if (this.last) this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
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

/** At most `limit` tasks at a time; the rest wait in order (limit 0 or less: no limit). */
export class Semaphore {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /**
   * Runs `task` once a slot is free. `signal` aborted before or while it waits: it leaves the queue at once
   * (rejecting with the signal's reason) and never runs, so a queue of abandoned tasks holds
   * nothing.
   */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw signal.reason as Error;
    if (this.limit > 0) {
      if (this.running >= this.limit) await this.turn(signal);
      else this.running++;
    }
    try {
      return await task();
    } finally {
      if (this.limit > 0) {
        const next = this.waiting.shift();
        // The slot passes straight to the next task (running stays the same).
        if (next) next();
        else this.running--;
      }
    }
  }

  /** Resolves when a slot passes to this waiter; rejects (and leaves the queue) if `signal` aborts first. */
  private turn(signal?: AbortSignal): Promise<void> {
    // (run has refused an aborted signal already, and nothing ran in between)
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason as Error);
      };
      const go = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiting.push(go);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
