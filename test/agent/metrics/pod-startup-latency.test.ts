/**
 * The pod startup SLI tracker (upstream pod_startup_latency_tracker): from the pod's creation to
 * the watch showing it running, less its image pulls; once per pod; only pods that had not started
 * when first seen; upstream's log line.
 */
import { describe, expect, it } from 'vitest';
import { PodStartupLatencyTracker } from '../../../src/agent/metrics/pod-startup-latency.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { Pod } from '../../../src/api/types.js';

const created = Date.UTC(2026, 10, 25, 3, 0, 0);
const pod = (uid: string, status?: Pod['status']): Pod =>
  ({
    metadata: { uid, name: uid, namespace: 'default', creationTimestamp: new Date(created).toISOString() },
    spec: { containers: [] },
    status,
  }) as Pod;
const running: Pod['status'] = {
  startTime: '2026-11-25T03:00:01Z',
  containerStatuses: [{ name: 'c', state: { running: { startedAt: '2026-11-25T03:00:05Z' } } }] as never,
};

function harness() {
  let now = created;
  const observed: [number, number][] = [];
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  const t = new PodStartupLatencyTracker({
    sink: { observe: (a, b) => void observed.push([a, b]) },
    logger,
    now: () => ({ ms: now, mono: now - created + 1000 }),
  });
  return { t, observed, lines, at: (ms: number) => (now = created + ms) };
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
    expect(h.lines).toHaveLength(1);
    expect(h.lines[0]).toMatchObject({
      msg: 'Observed pod startup duration',
      pod: 'default/a',
      podStartSLOduration: 3.25,
      podStartE2EDuration: '5.25s',
      podCreationTimestamp: '2026-11-25 03:00:00 +0000 UTC',
      firstStartedPulling: '2026-11-25 03:00:01 +0000 UTC m=+2.000000000',
      lastFinishedPulling: '2026-11-25 03:00:03 +0000 UTC m=+4.000000000',
      observedRunningTime: '2026-11-25 03:00:05 +0000 UTC m=+6.000000000',
      watchObservedRunningTime: '2026-11-25 03:00:05.25 +0000 UTC m=+6.250000000',
    });
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
