/**
 * Timers keyed by their absolute due time: every callback due at the same millisecond runs from
 * one clock timer, so many periodic workers aligned on a grid cost one wake-up per grid point.
 */
import type { CancelTimer, Clock } from './clock.js';

interface Slot {
  fns: Set<() => void>;
  cancel: CancelTimer;
}

/** Callbacks at absolute times, one clock timer per distinct time. */
export class CoalescedTimers {
  private readonly slots = new Map<number, Slot>();

  constructor(private readonly clock: Clock) {}

  /** Runs `fn` at `dueMs` (on the clock's monotonic time; a time already past runs at once) unless cancelled. */
  at(dueMs: number, fn: () => void): CancelTimer {
    let slot = this.slots.get(dueMs);
    if (!slot) {
      const fns = new Set<() => void>();
      const cancel = this.clock.setTimer(() => {
        this.slots.delete(dueMs);
        for (const f of fns) f();
      }, dueMs - this.clock.monotonic());
      slot = { fns, cancel };
      this.slots.set(dueMs, slot);
    }
    const s = slot;
    const entry = () => fn();
    s.fns.add(entry);
    return () => {
      s.fns.delete(entry);
      if (s.fns.size === 0 && this.slots.get(dueMs) === s) {
        s.cancel();
        this.slots.delete(dueMs);
      }
    };
  }
}
