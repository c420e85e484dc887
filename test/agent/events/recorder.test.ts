/**
 * The event recorder against the fake apiserver, as upstream's broadcaster and correlator write Events: their shape,
 * repeats as count patches, similar events combined, the per-object spam filter, the events client's rate limit (a
 * wait, not a drop), the bounded queue, and writes tried again while the apiserver cannot be reached.
 */
import { describe, expect, it } from 'vitest';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { createLogger } from '../../../src/lib/logger.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { EventRecorder, MAX_QUEUED_EVENTS, nodeRef, podRef } from '../../../src/agent/events/recorder.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';

const fake = useFakeApiserver();

async function recorder(o: { qps: number; burst: number }) {
  const clock = new FakeClock(Date.UTC(2026, 10, 22));
  const rec = new EventRecorder({
    client: await createKubeClient(fake.kubeconfig, { timeoutMs: 5000 }),
    nodeName: 'n1',
    clock,
    logger: createLogger({ level: 'fatal' }),
    ...o,
  });
  return { clock, rec };
}

/** The Events of pod `name` now in the apiserver. */
const eventsOf = (name: string) =>
  fake.api.store.list('events').filter((e) => (e.involvedObject as { name: string }).name === name);

/** Advances `clock` a step at a time, letting the writer run between steps, until `done`. */
async function advanceUntil(
  clock: FakeClock,
  stepMs: number,
  done: () => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    clock.advance(stepMs);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('EventRecorder', () => {
  it('creates core/v1 Events from the kubelet, patches the count of a repeat, and waits for its rate', async () => {
    const { clock, rec } = await recorder({ qps: 1, burst: 3 });
    const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u-1', resourceVersion: '7' } };
    rec.record(podRef(pod, { name: 'main' }), 'Warning', 'BackOff', 'Back-off restarting failed container main');
    rec.record(podRef(pod, { name: 'main' }), 'Warning', 'BackOff', 'Back-off restarting failed container main');
    rec.record(nodeRef('n1'), 'Normal', 'NodeReady', 'Node n1 status is now: NodeReady');
    rec.record(nodeRef('n1'), 'Normal', 'Waited', 'over the burst: written once a token is there');
    await until(() => fake.api.store.list('events').length === 2, 5000, 'the burst written');
    const backoff = fake.api.store.list('events').find((e) => e.reason === 'BackOff')!;
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
      reportingComponent: 'kubelet',
      reportingInstance: 'n1',
      firstTimestamp: '2026-11-22T00:00:00Z',
    });
    // Upstream's name: the object's, then the time in nanoseconds, in hex.
    expect(BigInt(`0x${backoff.metadata.name.split('.')[1]}`)).toBe(BigInt(Date.UTC(2026, 10, 22)) * 1_000_000n);
    expect(fake.api.store.list('events').find((e) => e.reason === 'NodeReady')).toMatchObject({
      metadata: { namespace: 'default' },
      // With its apiVersion, which `kubectl events --for node/n1` selects on (upstream v1.35+).
      involvedObject: { kind: 'Node', apiVersion: 'v1', name: 'n1', uid: 'n1' },
    });
    const patch = fake.api.requests.filter((r) => r.path.endsWith(backoff.metadata.name) && r.method === 'PATCH')[0];
    expect(patch.contentType).toBe('application/strategic-merge-patch+json');
    // Over the burst the event waits for its token: it is not dropped.
    expect(fake.api.store.list('events').map((e) => e.reason)).not.toContain('Waited');
    clock.advance(1000);
    await rec.flush();
    expect(fake.api.store.list('events').map((e) => e.reason)).toContain('Waited');
  });

  it("holds back an object's events past 25, one every 5 minutes after, and counts what it held back", async () => {
    const { clock, rec } = await recorder({ qps: 0, burst: 0 });
    const pod = podRef({ metadata: { name: 'spammy', namespace: 'shop', uid: 'u-2' } });
    for (let i = 0; i < 30; i++) rec.record(pod, 'Warning', 'Unhealthy', 'Liveness probe failed: boom');
    await rec.flush();
    expect(eventsOf('spammy')).toHaveLength(1);
    expect(eventsOf('spammy')[0].count).toBe(25);
    rec.record(pod, 'Warning', 'Unhealthy', 'Liveness probe failed: boom');
    rec.record(pod, 'Normal', 'Other', 'another reason, the same object');
    await rec.flush();
    expect(eventsOf('spammy').map((e) => e.reason)).toEqual(['Unhealthy']);
    clock.advance(300_000);
    rec.record(pod, 'Warning', 'Unhealthy', 'Liveness probe failed: boom');
    await rec.flush();
    // Every occurrence is counted, those held back too.
    expect(eventsOf('spammy')[0].count).toBe(32);
  });

  it("combines an object's events of one reason once 10 messages differ, counting the next ones there", async () => {
    const { clock, rec } = await recorder({ qps: 0, burst: 0 });
    const pod = podRef({ metadata: { name: 'mounts', namespace: 'shop', uid: 'u-3' } });
    for (let i = 1; i <= 12; i++) rec.record(pod, 'Warning', 'FailedMount', `MountVolume.SetUp failed: attempt ${i}`);
    // The writer takes the queued events after this: the combined Event is stamped then, as upstream's correlator
    // stamps it when it combines, not when the event was recorded.
    clock.advance(5000);
    await rec.flush();
    const events = eventsOf('mounts');
    expect(events.map((e) => e.message).filter((m) => !m.startsWith('(combined'))).toEqual(
      Array.from({ length: 9 }, (_, i) => `MountVolume.SetUp failed: attempt ${i + 1}`),
    );
    const combined = events.filter((e) => e.message.startsWith('(combined'));
    expect(combined).toHaveLength(1);
    expect(combined[0]).toMatchObject({
      reason: 'FailedMount',
      type: 'Warning',
      count: 3,
      message: '(combined from similar events): MountVolume.SetUp failed: attempt 12',
      firstTimestamp: '2026-11-22T00:00:05Z',
    });
    expect(events.find((e) => e.message.endsWith('attempt 9'))?.firstTimestamp).toBe('2026-11-22T00:00:00Z');
  });

  it('drops what does not fit its queue of 1,000 while the writer waits', async () => {
    const { clock, rec } = await recorder({ qps: 1000, burst: 1000 });
    const total = MAX_QUEUED_EVENTS + 5;
    for (let i = 0; i < total; i++)
      rec.record(podRef({ metadata: { name: `q${i}`, namespace: 'queue', uid: `u-q${i}` } }), 'Normal', 'Q', 'queued');
    const queued = () => fake.api.store.list('events').filter((e) => e.metadata.namespace === 'queue').length;
    // One taken by the writer, a thousand in the queue: a thousand requests, one after the other, which a loaded
    // machine may take well over the usual 30 s to answer.
    await advanceUntil(clock, 1000, () => queued() === MAX_QUEUED_EVENTS + 1, 'the queue written', 120_000);
    clock.advance(60_000);
    await rec.flush();
    expect(queued()).toBe(MAX_QUEUED_EVENTS + 1);
  }, 150_000);

  it('tries a write again while the apiserver cannot be reached', async () => {
    const { clock, rec } = await recorder({ qps: 0, burst: 0 });
    const back = fake.api.restart(1500);
    rec.record(nodeRef('n1'), 'Normal', 'WhileDown', 'written once the apiserver is back');
    await back;
    const written = () => fake.api.store.list('events').some((e) => e.reason === 'WhileDown');
    await advanceUntil(clock, 10_000, written, 'the event written after the outage');
  });

  it('logs every event at V(3) as upstream\'s "Event occurred" line, with or without an apiserver', () => {
    const lines: string[] = [];
    const rec = new EventRecorder({
      nodeName: 'n1',
      clock: new FakeClock(),
      logger: createLogger({ verbosity: 3, destination: { write: (s: string) => void lines.push(s) } }),
      qps: 0,
      burst: 0,
    });
    const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u-1' } };
    rec.record(podRef(pod, { name: 'main' }), 'Normal', 'Pulled', 'Container image "busybox" already present');
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ msg: 'No api server defined - no events will be sent to API server' }),
      expect.objectContaining({
        msg: 'Event occurred',
        object: 'shop/web',
        fieldPath: 'spec.containers{main}',
        kind: 'Pod',
        apiVersion: 'v1',
        type: 'Normal',
        reason: 'Pulled',
        message: 'Container image "busybox" already present',
      }),
    ]);
  });
});
