/**
 * Timers longer than a Node timer takes (2^31 − 1 ms, ~24.8 days): a longer setTimeout fires at
 * once. Regression: a StopContainer with a 30-day grace period failed at once with "Deadline
 * exceeded", and the embedded runtime killed the container at once instead of waiting.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { longTimeout, realClock } from '../../src/lib/clock.js';

afterEach(() => void vi.useRealTimers());

describe('longTimeout', () => {
  it('fires after 30 days, not before', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    const fired: number[] = [];
    const start = Date.now();
    longTimeout(() => fired.push(Date.now() - start), 30 * 86_400_000);
    vi.advanceTimersByTime(25 * 86_400_000);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(5 * 86_400_000);
    expect(fired).toEqual([30 * 86_400_000]);
  });

  it('is cancelled at any step, and the real clock’s timers are long ones too', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    let fired = 0;
    const cancel = longTimeout(() => fired++, 40 * 86_400_000);
    vi.advanceTimersByTime(26 * 86_400_000);
    cancel();
    vi.advanceTimersByTime(20 * 86_400_000);
    expect(fired).toBe(0);
    realClock.setTimer(() => fired++, 30 * 86_400_000);
    vi.advanceTimersByTime(86_400_000);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(29 * 86_400_000);
    expect(fired).toBe(1);
  });
});
