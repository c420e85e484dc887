/**
 * Pod-level resources (PodLevelResources): spec.resources decides the pod's requests, limits, QoS class, pod cgroup and
 * memory-backed emptyDir size.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { podRequests, podResources } from '../../../src/agent/admission/predicate.js';
import { qosClass } from '../../../src/agent/status/qos-class.js';
import { resourceConfigForPod } from '../../../src/agent/cgroups/pod-resource-config.js';
import { memoryBackedSize } from '../../../src/agent/volume/plugins/empty-dir.js';
import { rankForEviction } from '../../../src/agent/eviction/rank.js';

const Mi = 1024 ** 2;
const pod = (resources: Record<string, Record<string, string>>, containerLimits?: Record<string, string>): Pod =>
  ({
    metadata: { name: 'p', uid: 'u' },
    spec: {
      resources,
      containers: [
        { name: 'a', image: 'x', resources: containerLimits ? { limits: containerLimits } : {} },
        { name: 'b', image: 'x' },
      ],
    },
  }) as unknown as Pod;

describe('pod-level resources', () => {
  it('the pod-level requests and limits are the pod’s, whatever its containers say', () => {
    const p = pod(
      { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } },
      { cpu: '100m' },
    );
    expect(podRequests(p)).toEqual({ cpuMilli: 500, memoryBytes: 128 * Mi });
    expect(podResources(p, 'limits')).toEqual({ cpuMilli: 1000, memoryBytes: 256 * Mi });
  });

  it('decide the QoS class', () => {
    expect(qosClass(pod({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }))).toBe(
      'Guaranteed',
    );
    expect(qosClass(pod({ limits: { cpu: '1', memory: '1Gi' } }))).toBe('Guaranteed');
    expect(qosClass(pod({ requests: { cpu: '500m' }, limits: { cpu: '1', memory: '1Gi' } }))).toBe('Burstable');
    expect(qosClass(pod({ requests: { memory: '64Mi' } }))).toBe('Burstable');
  });

  it('shape the pod cgroup and bound a memory-backed emptyDir', () => {
    const p = pod({ requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } });
    expect(resourceConfigForPod(p, { enforceCpuLimits: true, cpuPeriodUs: 100_000, podPidsLimit: -1 })).toMatchObject({
      cpuQuota: 100_000,
      memoryLimit: 256 * Mi,
    });
    expect(memoryBackedSize(p, 0, 4096 * Mi)).toBe(256 * Mi);
  });

  it('rank a pod for eviction by its pod-level memory request', () => {
    const small = { ...pod({ requests: { memory: '64Mi' } }), metadata: { name: 'small', uid: 's' } } as Pod;
    const large = { ...pod({ requests: { memory: '1Gi' } }), metadata: { name: 'large', uid: 'l' } } as Pod;
    const ranked = rankForEviction(
      [
        { pod: large, usage: 512 * Mi },
        { pod: small, usage: 128 * Mi },
      ] as never,
      { signal: 'memory.available' } as never,
    );
    expect(ranked.map((c: { pod: Pod }) => c.pod.metadata.name)).toEqual(['small', 'large']);
  });
});
