/**
 * The probe schedule (pure): the grid step per period, the first run (jittered only right after a
 * kubelet start, as upstream), the fixed rate with dropped ticks and the rounding onto the grid; what is left
 * of a container's initial delay, a wall clock stepped back included.
 */
import { describe, expect, it } from 'vitest';
import { firstDue, initialDelayLeftMs, nextDue, probeGridMs } from '../../../src/agent/prober/probe-schedule.js';

describe('probe schedule', () => {
  it.each([
    [1_000, 100],
    [3_000, 300],
    [10_000, 1_000],
    [60_000, 1_000],
    [500, 100],
  ])('period %i ms → grid %i ms', (period, grid) => expect(probeGridMs(period)).toBe(grid));

  it.each([
    // now, kubelet start, period, random → due
    [100_000, 99_000, 10_000, 0.55, 106_000], // started 1 s ago: jitter 5.5 s, rounded up to the 1 s grid
    [100_000, 99_000, 10_000, 0, 100_000],
    [100_250, 99_500, 1_000, 0.5, 100_800], // 1 s period: grid 100 ms
    [100_000, 50_000, 10_000, 0.9, 100_000], // kubelet up for longer than a period: now
  ])('first run at now=%i, kubelet start=%i, period=%i, random=%f → %i', (now, start, period, random, due) =>
    expect(firstDue(now, start, period, random)).toBe(due),
  );

  it.each([
    // previous due, now, period → next due
    [100_000, 100_005, 10_000, 110_000], // fixed rate, already on the grid
    [100_123, 100_200, 10_000, 111_000], // a manual trigger off the grid: rounded up onto it
    [100_000, 125_000, 10_000, 130_000], // ticks already past are dropped (110 s, 120 s)
    [100_000, 110_000, 10_000, 120_000], // a tick due exactly now is past
    [100_000, 100_050, 1_000, 101_000],
  ])('after %i at now=%i with period %i → %i', (prev, now, period, due) =>
    expect(nextDue(prev, now, period)).toBe(due),
  );

  it.each([
    // container start, now, initialDelaySeconds in ms → left
    [100_000, 105_000, 10_000, 5_000],
    [100_000, 110_000, 10_000, 0],
    [100_000, 200_000, 0, 0],
    // The wall clock stepped back an hour since the container started: no delay left, rather than an hour's.
    [100_000_000, 100_000_000 - 3_600_000, 10_000, 0],
  ])('a container started at %i, at %i, with an initial delay of %i ms: %i ms left', (start, now, delay, left) =>
    expect(initialDelayLeftMs(start, now, delay)).toBe(left),
  );
});
