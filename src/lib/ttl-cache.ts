/**
 * A bounded cache with per-entry expiry: at most `maxEntries` (least recently used go first),
 * each entry valid for the TTL it was stored with. Time comes from a Clock's monotonic reading: a wall clock stepped
 * back does not keep an entry (an authorization webhook's "allowed") for longer than its TTL.
 */
import type { Clock } from './clock.js';

/** Bounded TTL cache. All methods are synchronous and O(1). */
export class TtlCache<V> {
  private readonly m = new Map<string, { value: V; expires: number }>();

  constructor(private readonly opts: { maxEntries: number; clock: Clock }) {}

  /** The live value for `key`, refreshing its recency; undefined when absent or expired. */
  get(key: string): V | undefined {
    const e = this.m.get(key);
    if (!e) return undefined;
    this.m.delete(key);
    if (e.expires <= this.opts.clock.monotonic()) return undefined;
    this.m.set(key, e);
    return e.value;
  }

  /** Stores `value` for `ttlMs` (0 or less: not stored). */
  set(key: string, value: V, ttlMs: number): void {
    this.m.delete(key);
    if (ttlMs <= 0) return;
    this.m.set(key, { value, expires: this.opts.clock.monotonic() + ttlMs });
    while (this.m.size > this.opts.maxEntries) this.m.delete(this.m.keys().next().value!);
  }

  /** Number of stored entries (expired ones included until touched). */
  get size(): number {
    return this.m.size;
  }
}
