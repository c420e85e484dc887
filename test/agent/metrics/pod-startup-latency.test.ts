/**
 * The pod startup SLI tracker (upstream pod_startup_latency_tracker, v1.36): from the pod's creation to the watch
 * showing it running, less its image pulls (overlapping ones counted once) and its init containers' run; once per pod;
 * only pods that had not started when first seen and were immediately schedulable; stateful pods in the total only;
 * the first network pod's SLI apart; upstream's log line. The timelines are upstream's own test cases.
 */
import { describe, expect, it } from 'vitest';
import { imagePullingMs, PodStartupLatencyTracker } from '../../../src/agent/metrics/pod-startup-latency.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { Pod } from '../../../src/api/types.js';

const created = Date.UTC(2026, 10, 25, 3, 0, 0);
const pod = (uid: string, status?: Pod['status'], spec: Partial<Pod['spec']> = {}): Pod =>
  ({
    metadata: { uid, name: uid, namespace: 'default', creationTimestamp: new Date(created).toISOString() },
    spec: { containers: [], ...spec },
    status,
  }) as Pod;
const running: Pod['status'] = {
  startTime: '2026-11-25T03:00:01Z',
  containerStatuses: [{ name: 'c', state: { running: { startedAt: '2026-11-25T03:00:05Z' } } }] as never,
};

function harness() {
  let now = created;
  const observed: [number | undefined, number][] = [];
  const firstNetwork: number[] = [];
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  const t = new PodStartupLatencyTracker({
    sink: { observe: (a, b) => void observed.push([a, b]), firstNetworkPod: (s) => void firstNetwork.push(s) },
    logger,
    now: () => ({ ms: now, mono: now - created + 1000 }),
  });
  return { t, observed, firstNetwork, lines, at: (ms: number) => (now = created + ms) };
}

describe('pod startup latency', () => {
  it('creation → running seen on the watch, less the pulls; once; logged as upstream', () => {
    const h = harness();
    h.at(500);
    h.t.observedOnWatch([pod('a')]);
    h.at(1000);
    h.t.startedPulling('a');
    h.at(3000);
    h.t.finishedPulling('a');
    h.t.statusUpdated('a', { phase: 'Pending' });
    h.at(5000);
    h.t.statusUpdated('a', running);
    // The watch has not shown it running yet.
    h.t.observedOnWatch([pod('a')]);
    expect(h.observed).toEqual([]);
    h.at(5250);
    h.t.observedOnWatch([pod('a', running)]);
    h.t.observedOnWatch([pod('a', running)]);
    expect(h.observed).toEqual([[3.25, 5.25]]);
    expect(h.firstNetwork).toEqual([3.25]);
    expect(h.lines).toHaveLength(1);
    expect(h.lines[0]).toMatchObject({
      msg: 'Observed pod startup duration',
      pod: 'default/a',
      podStartSLOduration: 3.25,
      podStartE2EDuration: '5.25s',
      totalImagesPullingTime: '2s',
      totalInitContainerRuntime: '0s',
      isStatefulPod: false,
      podCreationTimestamp: '2026-11-25 03:00:00 +0000 UTC',
      imagePullSessionsCount: 1,
      imagePullSessionsStartsCount: 0,
      observedRunningTime: '2026-11-25 03:00:05 +0000 UTC m=+6.000000000',
      watchObservedRunningTime: '2026-11-25 03:00:05.25 +0000 UTC m=+6.250000000',
    });
  });

  it('overlapping pulls count once: three between 10 s and 20 s are 10 s, so a pod running at 30 s took 20', () => {
    expect(
      imagePullingMs([
        { start: 10_000, end: 16_000 },
        { start: 11_000, end: 18_000 },
        { start: 14_000, end: 20_000 },
      ]),
    ).toBe(10_000);
    const h = harness();
    h.t.observedOnWatch([pod('a')]);
    for (const [ms, step] of [
      [10_000, 'start'],
      [11_000, 'start'],
      [14_000, 'start'],
      [16_000, 'finish'],
      [18_000, 'finish'],
      [20_000, 'finish'],
    ] as const) {
      h.at(ms);
      if (step === 'start') h.t.startedPulling('a');
      else h.t.finishedPulling('a');
    }
    h.t.statusUpdated('a', running);
    h.at(30_000);
    h.t.observedOnWatch([pod('a', running)]);
    h.at(150_000);
    h.t.observedOnWatch([pod('a', running)]);
    expect(h.observed).toEqual([[20, 30]]);
  });

  it("leaves out the init containers' run: pulls 3.3 s and init containers 3.5 s of 11 s are an SLI of 4.2 s", () => {
    const h = harness();
    h.t.observedOnWatch([pod('a')]);
    const pull = (from: number, to: number) => {
      h.at(from);
      h.t.startedPulling('a');
      h.at(to);
      h.t.finishedPulling('a');
    };
    pull(500, 1500);
    h.t.initContainerStarted('a', created + 2000);
    h.t.initContainerFinished('a', created + 4000);
    // A finish seen again at the next sync counts nothing more.
    h.t.initContainerFinished('a', created + 4000);
    pull(4200, 5200);
    h.t.initContainerStarted('a', created + 5500);
    h.t.initContainerFinished('a', created + 7000);
    // Two main containers' images pulled at once: 7.2–8.2 s and 7.3–8.5 s, 1.3 s together.
    h.at(7200);
    h.t.startedPulling('a');
    h.at(7300);
    h.t.startedPulling('a');
    h.at(8200);
    h.t.finishedPulling('a');
    h.at(8500);
    h.t.finishedPulling('a');
    h.at(11_000);
    h.t.statusUpdated('a', running);
    h.t.observedOnWatch([pod('a', running)]);
    expect(h.observed.map(([sli, total]) => [Number(sli?.toFixed(3)), total])).toEqual([[4.2, 11]]);
    expect(h.lines[0]).toMatchObject({ totalImagesPullingTime: '3.3s', totalInitContainerRuntime: '3.5s' });
  });

  it('a stateful pod counts in the total only, and is not the first network pod; a host-network pod is not either', () => {
    const h = harness();
    const claim = { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }] };
    const token = { volumes: [{ name: 'kube-api-access', projected: { sources: [] } }] };
    const plain = {
      volumes: [
        { name: 's', secret: {} },
        { name: 'e', emptyDir: {} },
      ],
    };
    h.t.observedOnWatch([
      pod('claim', undefined, claim),
      pod('token', undefined, token),
      pod('host', undefined, { ...plain, hostNetwork: true }),
      pod('plain', undefined, plain),
    ]);
    h.at(2000);
    for (const uid of ['claim', 'token', 'host', 'plain']) h.t.statusUpdated(uid, running);
    // The watch's full set each time: the first three shown running first, then the fourth.
    h.t.observedOnWatch([
      pod('claim', running, claim),
      pod('token', running, token),
      pod('host', running, { ...plain, hostNetwork: true }),
      pod('plain', undefined, plain),
    ]);
    h.t.observedOnWatch([
      pod('claim', running, claim),
      pod('token', running, token),
      pod('host', running, { ...plain, hostNetwork: true }),
      pod('plain', running, plain),
    ]);
    // Upstream's isStatefulPod: any volume but secrets, configMaps, downwardAPI and emptyDirs (a projected one too).
    expect(h.observed).toEqual([
      [undefined, 2],
      [undefined, 2],
      [2, 2],
      [2, 2],
    ]);
    expect(h.lines.map((l) => [l.pod, l.isStatefulPod])).toEqual([
      ['default/claim', true],
      ['default/token', true],
      ['default/host', false],
      ['default/plain', false],
    ]);
    expect(h.firstNetwork).toEqual([2]);
  });

  it('a pod not immediately schedulable is never measured, even once it could be; nor a finished one', () => {
    const h = harness();
    const notScheduled = { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] };
    h.t.observedOnWatch([pod('late', notScheduled as never), pod('done')]);
    h.t.observedOnWatch([pod('late'), pod('done', { phase: 'Succeeded' })]);
    h.t.statusUpdated('late', running);
    h.t.statusUpdated('done', running);
    h.at(3000);
    h.t.observedOnWatch([pod('late', running), pod('done', running)]);
    expect(h.observed).toEqual([]);
  });

  it('a pod already started when first seen (a kubelet restart) is not measured; a pod gone is forgotten', () => {
    const h = harness();
    h.t.observedOnWatch([pod('old', running), pod('b')]);
    h.t.statusUpdated('old', running);
    h.t.observedOnWatch([pod('old', running)]);
    h.t.statusUpdated('b', running);
    h.t.observedOnWatch([pod('b', running)]);
    expect(h.observed).toEqual([]);
  });
});
