/** The periodic updates of a CSI driver's volume limit (MutableCSINodeAllocatableCount), on a fake clock. */
import { describe, expect, it } from 'vitest';
import {
  AllocatableUpdates,
  RECHECK_MS,
  updatePeriodMs,
} from '../../../../src/agent/volume/csi/allocatable-updates.js';
import type { CsiDriverObj } from '../../../../src/agent/volume/csi/csi-api-types.js';
import { FakeClock } from '../../../../src/lib/clock.js';
import { createLogger } from '../../../../src/lib/logger.js';

const logger = createLogger({ level: 'fatal' });
const settle = () => Promise.resolve();

function fixture() {
  const clock = new FakeClock();
  const state = { driver: null as CsiDriverObj | null, max: 7, asked: 0, written: [] as number[], fail: false };
  const updates = new AllocatableUpdates({
    clock,
    logger,
    driverObject: async () => state.driver,
    maxVolumes: async () => {
      state.asked++;
      if (state.fail) throw new Error('rpc error: code = Unavailable');
      return state.max;
    },
    setAllocatable: async (_, count) => void state.written.push(count),
  });
  /** Moves the clock a second at a time, letting each round's promises run (a round schedules the next after them). */
  const advance = async (ms: number) => {
    for (let done = 0; done < ms; done += 1000) {
      clock.advance(Math.min(1000, ms - done));
      for (let i = 0; i < 20; i++) await settle();
    }
  };
  return { clock, state, updates, advance };
}

describe('allocatable volume count updates', () => {
  it('take the period from the CSIDriver, at least 10 s; none without one', () => {
    expect(updatePeriodMs({ spec: { nodeAllocatableUpdatePeriodSeconds: 60 } })).toBe(60_000);
    expect(updatePeriodMs({ spec: { nodeAllocatableUpdatePeriodSeconds: 3 } })).toBe(10_000);
    expect(updatePeriodMs({ spec: {} })).toBeUndefined();
    expect(updatePeriodMs(null)).toBeUndefined();
  });

  it('ask NodeGetInfo each period and write only a changed limit; a failed round is tried again', async () => {
    const { state, updates, advance } = fixture();
    state.driver = { spec: { nodeAllocatableUpdatePeriodSeconds: 30 } };
    await updates.start('d.csi', 7);
    await advance(29_000);
    expect(state.asked).toBe(0);
    await advance(1_000);
    expect([state.asked, state.written]).toEqual([1, []]); // unchanged: nothing written
    state.max = 5;
    await advance(30_000);
    expect([state.asked, state.written]).toEqual([2, [5]]);
    state.fail = true;
    state.max = 4;
    await advance(30_000);
    state.fail = false;
    await advance(30_000);
    expect([state.asked, state.written]).toEqual([4, [5, 4]]);
    updates.stop('d.csi');
    await advance(120_000);
    expect(state.asked).toBe(4);
  });

  it('start when a CSIDriver asks for them later, and end when it no longer does', async () => {
    const { state, updates, advance } = fixture();
    await updates.start('d.csi', 7);
    await advance(RECHECK_MS * 2);
    expect(state.asked).toBe(0);
    state.driver = { spec: { nodeAllocatableUpdatePeriodSeconds: 10 } };
    state.max = 9;
    await advance(RECHECK_MS + 10_000);
    expect(state.written).toEqual([9]);
    state.driver = { spec: {} };
    const asked = state.asked;
    await advance(10_000);
    await advance(RECHECK_MS);
    expect(state.asked).toBe(asked + 1); // the round already due, then none
  });

  it('a driver registered again runs one chain of updates, not two', async () => {
    const { state, updates, advance } = fixture();
    state.driver = { spec: { nodeAllocatableUpdatePeriodSeconds: 10 } };
    await updates.start('d.csi', 7);
    await updates.start('d.csi', 7);
    await advance(10_000);
    expect(state.asked).toBe(1);
  });
});
