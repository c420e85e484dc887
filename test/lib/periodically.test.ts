/** The periodic loop every kubelet manager runs on: its timing, failures, overlap and stop. */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/lib/clock.js';
import { periodically } from '../../src/lib/periodically.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

async function advance(clock: FakeClock, ms: number): Promise<void> {
  await settle();
  clock.advance(ms);
  await settle();
}

describe('periodically', () => {
  it('runs one period in, then every period; or at once with immediately', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const runs: number[] = [];
    const start = clock.now();
    const options = { periodMs: 1000, signal: controller.signal, clock, onError: () => {} };
    periodically(() => runs.push(clock.now() - start), options);
    const atOnce: number[] = [];
    periodically(() => atOnce.push(clock.now() - start), { ...options, immediately: true });
    await settle();
    expect(runs).toEqual([]);
    expect(atOnce).toEqual([0]);
    for (let i = 0; i < 3; i++) await advance(clock, 1000);
    expect(runs).toEqual([1000, 2000, 3000]);
    expect(atOnce).toEqual([0, 1000, 2000, 3000]);
    controller.abort();
  });

  it('reports a failed run and goes on', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const errors: string[] = [];
    let runs = 0;
    periodically(
      async () => {
        runs++;
        if (runs === 1) throw new Error('first run failed');
      },
      { periodMs: 10, signal: controller.signal, clock, immediately: true, onError: (e) => errors.push(String(e)) },
    );
    await advance(clock, 10);
    await advance(clock, 10);
    expect(errors).toEqual(['Error: first run failed']);
    expect(runs).toBe(3);
    controller.abort();
  });

  it('starts the wait when a run ends, so runs never overlap', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    let inFlight = 0;
    let most = 0;
    let finish = () => {};
    periodically(
      async () => {
        most = Math.max(most, ++inFlight);
        await new Promise<void>((resolve) => (finish = resolve));
        inFlight--;
      },
      { periodMs: 10, signal: controller.signal, clock, immediately: true, onError: () => {} },
    );
    // The first run is still going after several periods: no second one starts.
    for (let i = 0; i < 5; i++) await advance(clock, 10);
    expect(most).toBe(1);
    finish();
    await advance(clock, 9);
    expect(inFlight).toBe(0);
    await advance(clock, 1);
    expect(inFlight).toBe(1);
    expect(most).toBe(1);
    finish();
    controller.abort();
  });

  it('stops on abort, during a wait or after the run in flight, and asks a period function before each wait', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const periods = [5, 50];
    let asked = 0;
    let runs = 0;
    let finish = () => {};
    periodically(
      async () => {
        runs++;
        await new Promise<void>((resolve) => (finish = resolve));
      },
      { periodMs: () => periods[Math.min(asked++, 1)], signal: controller.signal, clock, onError: () => {} },
    );
    await advance(clock, 5);
    expect(runs).toBe(1);
    finish();
    await advance(clock, 49);
    expect(runs).toBe(1);
    await advance(clock, 1);
    expect(runs).toBe(2);
    // Aborted while the second run is in flight: it ends, and no run follows.
    controller.abort();
    finish();
    for (let i = 0; i < 3; i++) await advance(clock, 50);
    expect(runs).toBe(2);
    expect(asked).toBe(3);
  });
});
