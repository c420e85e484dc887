/** The event recorder against the fake apiserver: Event shape, dedup by PATCHing count, rate limit. */
import { describe, expect, it } from 'vitest';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { createLogger } from '../../../src/lib/logger.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { EventRecorder, nodeRef, podRef } from '../../../src/agent/events/recorder.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';

const fake = useFakeApiserver();

describe('EventRecorder', () => {
  it('creates core/v1 Events from the kubelet, PATCHes the count of a repeat, and drops events over the burst', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 22));
    const rec = new EventRecorder({
      client: await createKubeClient(fake.kubeconfig, { timeoutMs: 5000 }),
      nodeName: 'n1',
      clock,
      logger: createLogger({ level: 'fatal' }),
      qps: 1,
      burst: 3,
    });
    const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u-1', resourceVersion: '7' } };
    rec.record(podRef(pod, { name: 'main' }), 'Warning', 'BackOff', 'Back-off restarting failed container main');
    rec.record(podRef(pod, { name: 'main' }), 'Warning', 'BackOff', 'Back-off restarting failed container main');
    rec.record(nodeRef('n1'), 'Normal', 'NodeReady', 'Node n1 status is now: NodeReady');
    rec.record(nodeRef('n1'), 'Normal', 'Dropped', 'over the burst');
    await rec.flush();
    const events = fake.api.store.list('events');
    expect(events).toHaveLength(2);
    const backoff = events.find((e) => e.reason === 'BackOff')!;
    expect(backoff).toMatchObject({
      metadata: { namespace: 'shop', name: expect.stringMatching(/^web\.[0-9a-f]{16}$/) },
      type: 'Warning',
      count: 2,
      involvedObject: {
        kind: 'Pod',
        apiVersion: 'v1',
        namespace: 'shop',
        name: 'web',
        uid: 'u-1',
        fieldPath: 'spec.containers{main}',
      },
      source: { component: 'kubelet', host: 'n1' },
      firstTimestamp: '2026-11-22T00:00:00Z',
    });
    expect(events.find((e) => e.reason === 'NodeReady')).toMatchObject({
      metadata: { namespace: 'default' },
      involvedObject: { kind: 'Node', name: 'n1', uid: 'n1' },
    });
    expect(
      fake.api.requests.filter((r) => r.path.endsWith(backoff.metadata.name) && r.method === 'PATCH')[0].contentType,
    ).toBe('application/strategic-merge-patch+json');
    clock.advance(2000);
    rec.record(nodeRef('n1'), 'Normal', 'Refilled', 'tokens refill at qps');
    await rec.flush();
    expect(fake.api.store.list('events').map((e) => e.reason)).toContain('Refilled');
  });
});
