/**
 * Containers' oom_score_adj as upstream's qos.GetContainerOOMScoreAdjust (v1.36) computes it, on a
 * node with 8 GiB: by QoS class, node-critical pods, a Burstable container by its memory request,
 * a pod-level request shared out among the containers (PodLevelResources), and sidecars no earlier
 * than the regular container that requests least.
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../../src/api/types.js';
import { oomScoreAdjust } from '../../../src/agent/runtime/oom-score-adjust.js';

const GiB = 2 ** 30;
const requests = (memory?: string) => (memory ? { resources: { requests: { memory } } } : {});
const container = (name: string, memory?: string, extra: Partial<Container> = {}): Container =>
  ({ name, image: 'busybox', ...requests(memory), ...extra }) as Container;

function pod(
  containers: Container[],
  options: {
    initContainers?: Container[];
    podMemory?: string;
    annotations?: Record<string, string>;
    priority?: number;
    priorityClassName?: string;
  } = {},
): Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid: 'u', annotations: options.annotations },
    spec: {
      containers,
      initContainers: options.initContainers,
      priority: options.priority,
      priorityClassName: options.priorityClassName,
      ...(options.podMemory ? { resources: { requests: { memory: options.podMemory } } } : {}),
    },
  } as unknown as Pod;
}

const adjustOf = (p: Pod, name: string) =>
  oomScoreAdjust(
    p,
    [...p.spec.containers, ...(p.spec.initContainers ?? [])].find((c) => c.name === name)!,
    8 * GiB,
  );

describe('oom_score_adj', () => {
  it.each([
    ['a Burstable request of a quarter of memory', pod([container('a', '2Gi')]), 750],
    ['a request of all memory: above the Guaranteed ones', pod([container('a', '8Gi')]), 3],
    ['a request of a byte: below the BestEffort ones', pod([container('a', '1')]), 999],
    ['BestEffort', pod([container('a')]), 1000],
    [
      'Guaranteed',
      pod([
        container('a', undefined, {
          resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        }),
      ]),
      -997,
    ],
  ])('%s', (_, p, expected) => expect(adjustOf(p, 'a')).toBe(expected));

  it('gives node-critical pods the Guaranteed score, and other critical ones their class score', () => {
    const source = { 'kubernetes.io/config.source': 'file' };
    const staticNodeCritical = pod([container('a', '2Gi')], {
      annotations: source,
      priorityClassName: 'system-node-critical',
    });
    expect(adjustOf(staticNodeCritical, 'a')).toBe(-997);
    const apiNodeCritical = pod([container('a')], {
      annotations: { 'kubernetes.io/config.source': 'api' },
      priority: 2_000_001_000,
      priorityClassName: 'system-node-critical',
    });
    expect(adjustOf(apiNodeCritical, 'a')).toBe(-997);
    // Static but not of the node-critical class; of the class but neither static nor of its priority.
    expect(adjustOf(pod([container('a', '2Gi')], { annotations: source }), 'a')).toBe(750);
    expect(adjustOf(pod([container('a')], { priorityClassName: 'system-node-critical' }), 'a')).toBe(1000);
  });

  it("shares out a pod-level request the containers' requests leave over, init containers counted", () => {
    // 4 GiB for the pod, 1 GiB requested by its containers: 1.5 GiB more for each of the two.
    const twoContainers = pod([container('a', '1Gi'), container('b')], { podMemory: '4Gi' });
    expect(adjustOf(twoContainers, 'a')).toBe(688);
    expect(adjustOf(twoContainers, 'b')).toBe(813);
    // The init container's 2 GiB is the containers' aggregate; 2 GiB left over for two containers.
    const withInit = pod([container('a', '1Gi')], { podMemory: '4Gi', initContainers: [container('init', '2Gi')] });
    expect(adjustOf(withInit, 'a')).toBe(750);
    // Without a pod-level request, the container's own.
    expect(adjustOf(pod([container('a', '1Gi'), container('b')]), 'a')).toBe(875);
  });

  it('kills a sidecar no earlier than the regular container that requests least', () => {
    const sidecar = (memory: string) => container('sidecar', memory, { restartPolicy: 'Always' });
    const small = pod([container('a', '2Gi'), container('b', '4Gi')], { initContainers: [sidecar('1Gi')] });
    expect(adjustOf(small, 'sidecar')).toBe(750);
    const large = pod([container('a', '2Gi')], { initContainers: [sidecar('4Gi')] });
    expect(adjustOf(large, 'sidecar')).toBe(500);
    // An init container that is not restartable keeps its own.
    const plainInit = pod([container('a', '2Gi')], { initContainers: [container('init', '1Gi')] });
    expect(adjustOf(plainInit, 'init')).toBe(875);
    // With a pod-level request both sides get the share: 6 GiB − 3 GiB over two containers.
    const podLevel = pod([container('a', '2Gi')], { podMemory: '6Gi', initContainers: [sidecar('1Gi')] });
    expect(adjustOf(podLevel, 'sidecar')).toBe(563);
    expect(adjustOf(podLevel, 'a')).toBe(563);
  });
});
