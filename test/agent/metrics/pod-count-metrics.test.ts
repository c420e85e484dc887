/** Upstream's pod count gauges from the pod manager and the pod workers. */
import { describe, expect, it } from 'vitest';
import { podCounts } from '../../../src/agent/metrics/pod-count-metrics.js';
import type { Pod } from '../../../src/api/types.js';

const pod = (uid: string, source: 'api' | 'file'): Pod =>
  ({
    metadata: { uid, name: uid, namespace: 'default', annotations: { 'kubernetes.io/config.source': source } },
    spec: { containers: [] },
  }) as Pod;

describe('pod counts', () => {
  it('desired and active by static, mirrors for static pods with an apiserver, working pods by lifecycle, config and static', () => {
    const a = pod('a', 'api');
    const s = pod('s', 'file');
    const gone = pod('gone', 'api');
    const c = podCounts({
      desired: [a, s],
      workers: [
        { uid: 'a', state: 'sync', pod: a },
        { uid: 's', state: 'sync', pod: s },
        { uid: 'gone', state: 'terminating', pod: gone },
      ],
      mirrors: true,
    });
    expect(c.desired).toEqual({ '': 1, true: 1 });
    expect(c.active).toEqual({ '': 1, true: 1 });
    expect(c.mirror).toBe(1);
    // Upstream's 15 series: desired and orphan by static "" / "true", runtime_only with static "unknown", in each
    // lifecycle.
    expect(c.working).toHaveLength(15);
    expect(c.working.filter((w) => w.config === 'runtime_only').map((w) => w.static)).toEqual([
      'unknown',
      'unknown',
      'unknown',
    ]);
    const n = (lifecycle: string, config: string, st: string) =>
      c.working.find((w) => w.lifecycle === lifecycle && w.config === config && w.static === st)!.count;
    expect([
      n('sync', 'desired', ''),
      n('sync', 'desired', 'true'),
      n('terminating', 'orphan', ''),
      n('terminated', 'desired', ''),
    ]).toEqual([1, 1, 1, 0]);
    expect(podCounts({ desired: [s], workers: [], mirrors: false }).mirror).toBe(0);
  });

  it('counts the ephemeral containers of the desired pods', () => {
    const debugged = pod('d', 'api');
    debugged.spec.ephemeralContainers = [
      { name: 'debugger', image: 'busybox' },
      { name: 'debugger2', image: 'busybox' },
    ];
    const counts = podCounts({ desired: [debugged, pod('p', 'api')], workers: [], mirrors: false });
    expect(counts.ephemeralContainers).toBe(2);
  });
});
