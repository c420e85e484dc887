/**
 * An unchanged node status is not reported again before nodeStatusReportFrequency, against a fake apiserver that
 * stores quantities as the real one does (canonical: "4194304Ki" reads back "4Gi"). Regression: the kubelet compared
 * its capacity and allocatable with the apiserver's by spelling, so on a machine whose memory or disk is a whole
 * number of MiB it found them changed at every pass and sent its heartbeat every nodeStatusUpdateFrequency — what
 * upstream's NodeLease spec "the kubelet should report node status infrequently" fails on.
 */
import { describe, expect, it } from 'vitest';
import { NodeStatusManager } from '../../../src/agent/nodestatus/node-status-manager.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';
import { testMachine, testNodeSettings } from './node-fixture.js';

const fake = useFakeApiserver();
const UPDATE_MS = 10_000;
const REPORT_MS = 300_000;

interface Condition {
  type: string;
  status: string;
  lastHeartbeatTime?: string;
}

describe('the node status report', () => {
  it('is not sent again while nothing changed, until the report frequency, on a machine of whole GiB', async () => {
    const nodeName = 'round-machine';
    fake.api.store.create('nodes', { metadata: { name: nodeName }, status: {} });
    const clock = new FakeClock(1_000_000);
    const runtime = { errors: [] as string[] };
    const manager = new NodeStatusManager({
      client: await createKubeClient(fake.kubeconfigFor(`system:node:${nodeName}`), { timeoutMs: 3000 }),
      settings: { ...testNodeSettings(nodeName), evictionHard: { 'memory.available': '100Mi' } },
      registerNode: false,
      // 4 GiB of memory and 50 GiB of disk: capacity "4Gi" and "50Gi", allocatable memory "3996Mi", as stored.
      machine: testMachine(),
      runtime: async () => ({ runtimeVersion: 'containerd://1.6', runtimeErrors: runtime.errors, images: [] }),
      events: { record: () => {} },
      clock,
      logger: silentLogger,
      updateFrequencyMs: UPDATE_MS,
      reportFrequencyMs: REPORT_MS,
      // The delay after a report a change caused: none (half the frequency either way upstream).
      random: () => 0.5,
    });
    const stop = new AbortController();
    manager.start({ signal: stop.signal });
    const reports = () =>
      fake.api.requests.filter((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${nodeName}/status`).length;
    const node = () => fake.api.store.get('nodes', '', nodeName)!;
    const ready = () => (node().status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Ready');
    /** Moves the fake clock a status pass ahead, letting the pass finish. */
    const nextPass = async () => {
      clock.advance(UPDATE_MS);
      await new Promise((resolve) => setTimeout(resolve, 30));
    };
    try {
      await until(() => ready()?.status === 'True', 5000, 'the first report');
      expect(node().status.capacity).toMatchObject({ memory: '4Gi', 'ephemeral-storage': '50Gi' });
      const first = reports();
      const heartbeat = ready()!.lastHeartbeatTime;
      for (let pass = 0; pass < 6; pass++) await nextPass();
      expect(reports()).toBe(first);
      expect(ready()!.lastHeartbeatTime).toBe(heartbeat);
      // A change goes out at the next pass.
      runtime.errors = ['container runtime is down'];
      await nextPass();
      await until(() => ready()?.status === 'False', 5000, 'the change reported');
      expect(reports()).toBe(first + 1);
      // Then nothing until the report frequency has passed since.
      for (let passed = UPDATE_MS; passed < REPORT_MS; passed += UPDATE_MS) await nextPass();
      expect(reports()).toBe(first + 1);
      await nextPass();
      await until(() => reports() === first + 2, 5000, 'the report at its frequency');
    } finally {
      stop.abort();
    }
  }, 60_000);
});
