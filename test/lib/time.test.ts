/** Wall-clock nanoseconds (the embedded runtime's timestamps): finer than a millisecond, and they follow a step. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nowNs } from '../../src/lib/time.js';

const HOUR_NS = 3_600_000_000_000n;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('nowNs', () => {
  it('is the wall clock to within a few milliseconds, and never goes back while the wall clock does not', () => {
    // The wall clock read on both sides: a loaded machine may stop the test for longer than the bound between reads.
    const before = BigInt(Date.now()) * 1_000_000n;
    const a = nowNs();
    const b = nowNs();
    const after = BigInt(Date.now()) * 1_000_000n;
    expect(b >= a).toBe(true);
    expect(a > before - 5_000_000n && a < after + 5_000_000n).toBe(true);
  });

  it('follows the wall clock stepped back an hour, and forward again', () => {
    const before = nowNs();
    const real = Date.now.bind(Date);
    const now = vi.spyOn(Date, 'now').mockImplementation(() => real() - 3_600_000);
    const stepped = nowNs();
    expect(before - stepped > HOUR_NS - 1_000_000_000n && before - stepped < HOUR_NS + 1_000_000_000n).toBe(true);
    now.mockRestore();
    const back = nowNs();
    expect(back - before >= 0n && back - before < 1_000_000_000n).toBe(true);
  });
});
