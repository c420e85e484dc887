/**
 * The runtime's tracked readiness when two CRI Status polls overlap (the periodic poll and the fast node status
 * update at start): the poll started last decides, whichever answer comes first.
 */
import { describe, expect, it } from 'vitest';
import { RuntimeState } from '../../../src/agent/runtime/runtime-state.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';

const answer = (networkReady: boolean): cri.StatusResponse => ({
  status: {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      {
        type: 'NetworkReady',
        status: networkReady,
        reason: networkReady ? '' : 'NetworkPluginNotReady',
        message: networkReady ? '' : 'cni plugin not initialized',
      },
    ],
  },
  info: {},
  runtime_handlers: [],
});

describe('RuntimeState', () => {
  it('keeps the answer of the poll started last when an earlier one answers after it', async () => {
    const pending: ((res: cri.StatusResponse) => void)[] = [];
    const runtime = { status: () => new Promise((resolve) => pending.push(resolve)) } as unknown as RuntimeService;
    const state = new RuntimeState({ runtime, clock: new FakeClock(), logger, periodMs: 5000 });
    // The first poll asks while the network is not ready; the second, after it became ready.
    const first = state.update();
    const second = state.update();
    pending[1](answer(true));
    await second;
    expect(state.networkError()).toBeUndefined();
    pending[0](answer(false));
    await first;
    expect(state.networkError()).toBeUndefined();
    // A later poll's answer counts again.
    const third = state.update();
    pending[2](answer(false));
    await third;
    expect(state.networkError()).toBe(
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
    );
  });
});
