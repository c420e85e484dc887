/**
 * The fast node status update at start (upstream's fastStatusUpdateOnce), against the fake apiserver: while the
 * Node has not been reported Ready, the runtime's readiness is read every 100 ms and the status goes out as soon as
 * it is ready — not at the next status pass, up to nodeStatusUpdateFrequency (and the runtime poll's period) later.
 * It stops once Ready was reported, or after upstream's nodeReadyGracePeriod with upstream's error.
 */
import { describe, expect, it } from 'vitest';
import {
  FAST_STATUS_PERIOD_MS,
  NODE_READY_GRACE_MS,
  NodeStatusManager,
} from '../../../src/agent/nodestatus/node-status-manager.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger, type Logger } from '../../../src/lib/logger.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';
import { testMachine, testNodeSettings } from './node-fixture.js';

const fake = useFakeApiserver();

const NETWORK_NOT_READY =
  'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized';

/** A manager whose runtime is not ready until the test says so; counts the runtime reads of the fast update. */
async function startManager(nodeName: string, logger: Logger = silentLogger) {
  fake.api.store.create('nodes', { metadata: { name: nodeName }, status: {} });
  const clock = new FakeClock(1_000_000);
  const runtime = { errors: [NETWORK_NOT_READY], reads: 0 };
  const manager = new NodeStatusManager({
    client: await createKubeClient(fake.kubeconfigFor(`system:node:${nodeName}`), { timeoutMs: 3000 }),
    settings: testNodeSettings(nodeName),
    registerNode: false,
    machine: testMachine(),
    runtime: async () => ({ runtimeVersion: 'containerd://1.6', runtimeErrors: runtime.errors, images: [] }),
    events: { record: () => {} },
    clock,
    logger,
    updateFrequencyMs: 10_000,
    reportFrequencyMs: 300_000,
    random: () => 0,
    readiness: {
      refresh: async () => void runtime.reads++,
      errors: () => runtime.errors,
    },
  });
  const stop = new AbortController();
  manager.start({ signal: stop.signal });
  const ready = () =>
    (
      fake.api.store.get('nodes', '', nodeName)?.status?.conditions as { type: string; status: string }[] | undefined
    )?.find((c) => c.type === 'Ready')?.status;
  // The first status pass (at once) reports the node not ready.
  await until(() => ready() === 'False', 5000, 'the first report');
  /** Moves the fake clock `ms` ahead in steps of the fast period, letting each step's requests finish. */
  const advance = async (ms: number) => {
    for (let passed = 0; passed < ms; passed += FAST_STATUS_PERIOD_MS) {
      clock.advance(FAST_STATUS_PERIOD_MS);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return { runtime, ready, advance, stop };
}

describe('the fast node status update at start', () => {
  it('reports Ready within a fast period of the runtime becoming ready, then stops reading the runtime', async () => {
    const { runtime, ready, advance, stop } = await startManager('fast-1');
    try {
      await advance(1000);
      expect(ready()).toBe('False');
      // It reads the runtime every 100 ms while the node is not ready (upstream's updateRuntimeUp in the loop).
      expect(runtime.reads).toBeGreaterThanOrEqual(9);
      runtime.errors = [];
      // Well before the next status pass (10 s) and the runtime's own poll (5 s).
      await advance(2 * FAST_STATUS_PERIOD_MS);
      await until(() => ready() === 'True', 2000, 'Ready reported');
      const reads = runtime.reads;
      await advance(1000);
      expect(runtime.reads).toBe(reads);
    } finally {
      stop.abort();
    }
  });

  it("gives up after upstream's grace period, with its error", async () => {
    const errors: string[] = [];
    const logger = new Proxy(silentLogger, {
      get: (target, name) =>
        name === 'error' ? (message: string) => void errors.push(message) : Reflect.get(target, name),
    });
    const { runtime, ready, advance, stop } = await startManager('fast-2', logger);
    try {
      await advance(NODE_READY_GRACE_MS + 1000);
      expect(errors).toEqual(['Node not becoming ready in time after startup']);
      const reads = runtime.reads;
      expect(reads).toBeGreaterThan(1000);
      await advance(1000);
      expect(runtime.reads).toBe(reads);
      expect(ready()).toBe('False');
    } finally {
      stop.abort();
    }
  }, 60_000);
});
