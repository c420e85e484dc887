/**
 * Critical pod preemption (upstream pkg/kubelet/preemption): what the node lacks, which pods may
 * be preempted, and which the kubelet picks — fewest pods, lowest QoS class first, closest fit.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { admitPod, shortfalls, type AdmissionNode, type Shortfall } from '../../../src/agent/admission/predicate.js';
import { isCritical, podsToPreempt, preemptable } from '../../../src/agent/admission/preemption.js';

const allocatable: AdmissionNode['allocatable'] = { cpuMilli: 2000, memoryBytes: 4 * 2 ** 30, pods: 10 };
const pod = (
  name: string,
  o: { cpu?: string; memory?: string; guaranteed?: boolean; priority?: number; static?: boolean } = {},
): Pod => {
  const res: Record<string, string> = {};
  if (o.cpu) res.cpu = o.cpu;
  if (o.memory) res.memory = o.memory;
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: name,
      annotations: o.static ? { 'kubernetes.io/config.source': 'file' } : {},
    },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'i',
          resources: o.cpu || o.memory ? { requests: res, ...(o.guaranteed ? { limits: res } : {}) } : {},
        },
      ],
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
    },
  } as Pod;
};
const names = (r: Pod[] | string) => (typeof r === 'string' ? r : r.map((p) => p.metadata.name));

describe('shortfalls', () => {
  it('lists every resource the node lacks, in upstream order, with what was requested, used and allocatable', () => {
    const admitted = [pod('a', { cpu: '1500m', memory: '3Gi' })];
    expect(shortfalls(pod('x', { cpu: '1', memory: '2Gi' }), admitted, { ...allocatable, pods: 1 })).toEqual([
      { resource: 'pods', requested: 1, used: 1, capacity: 1 },
      { resource: 'cpu', requested: 1000, used: 1500, capacity: 2000 },
      { resource: 'memory', requested: 2 * 2 ** 30, used: 3 * 2 ** 30, capacity: 4 * 2 ** 30 },
    ]);
    expect(shortfalls(pod('x', { cpu: '500m' }), admitted, allocatable)).toEqual([]);
  });
});

describe('critical pods', () => {
  it('static, mirror and system-critical priority pods are critical; a critical pod may preempt non-critical and lower-priority pods only', () => {
    const critical = pod('static', { static: true });
    expect(isCritical(critical)).toBe(true);
    expect(isCritical(pod('sys', { priority: 2_000_001_000 }))).toBe(true);
    expect(isCritical(pod('user', { priority: 1000 }))).toBe(false);
    expect(preemptable(critical, pod('user'))).toBe(true);
    expect(preemptable(critical, pod('other-static', { static: true }))).toBe(false);
    expect(preemptable(pod('hi', { priority: 10 }), pod('lo', { priority: 5 }))).toBe(true);
    expect(preemptable(pod('lo', { priority: 5 }), pod('hi', { priority: 10 }))).toBe(false);
  });
});

describe('podsToPreempt', () => {
  const critical = pod('critical', { static: true, cpu: '2' });
  const short = (cpuMilli: number) => [{ resource: 'cpu' as const, requested: 2000, used: cpuMilli, capacity: 2000 }];
  const bestEffort = pod('best-effort');
  const b100 = pod('burstable-100m', { cpu: '100m' });
  const b200 = pod('burstable-200m', { cpu: '200m' });
  const g300 = pod('guaranteed-300m', { cpu: '300m', memory: '64Mi', guaranteed: true });

  it('one pod that frees enough: the closest fit of the lowest class that can', () => {
    expect(names(podsToPreempt(critical, [bestEffort, b100, b200, g300], short(150)))).toEqual(['burstable-200m']);
  });

  it('several pods when one is not enough, fewest first; Guaranteed only when the lower classes cannot free it', () => {
    expect(names(podsToPreempt(critical, [bestEffort, b100, b200, g300], short(250)))).toEqual([
      'burstable-200m',
      'burstable-100m',
    ]);
    expect(names(podsToPreempt(critical, [bestEffort, b100, b200, g300], short(400)))).toEqual([
      'burstable-100m',
      'guaranteed-300m',
    ]);
  });

  it('a pod slot: the besteffort pod with the smallest request goes', () => {
    const slots = [{ resource: 'pods' as const, requested: 1, used: 3, capacity: 3 }];
    expect(names(podsToPreempt(critical, [b200, bestEffort, g300], slots))).toEqual(['best-effort']);
  });

  it('no set of preemptable pods frees enough: upstream’s error; critical pods are never victims', () => {
    const other = pod('other-static', { static: true, cpu: '1500m' });
    expect(podsToPreempt(critical, [b100, other], short(1600))).toBe(
      'no set of running pods found to reclaim resources: [(res: cpu, q: 1500), ]',
    );
  });
});

describe('extended resources', () => {
  it('a critical pod short of an extended resource the Node advertises preempts the pod that holds it (upstream GetResourceRequest for any resource)', () => {
    const dongles = (name: string, n: string, o: { static?: boolean } = {}): Pod => {
      const p = pod(name, o);
      p.spec.containers[0].resources = { requests: { 'example.com/dongle': n } };
      return p;
    };
    const holder = dongles('holder', '3');
    const other = pod('other', { cpu: '100m' });
    const critical = dongles('critical', '2', { static: true });
    const node: AdmissionNode = {
      name: 'n1',
      labels: {},
      taints: [],
      allocatable,
      extended: { 'example.com/dongle': 4 },
    };
    const r = admitPod(critical, [holder, other], { node, isStatic: true, isCritical: true });
    expect(r).toMatchObject({
      admit: false,
      reason: 'OutOfexample.com/dongle',
      shortfalls: [{ resource: 'example.com/dongle', requested: 2, used: 3, capacity: 4 }],
    });
    expect(names(podsToPreempt(critical, [holder, other], (r as { shortfalls: Shortfall[] }).shortfalls))).toEqual([
      'holder',
    ]);
  });
});
