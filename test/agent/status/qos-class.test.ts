/**
 * The QoS class as upstream's GetPodQOS gives it: the apiserver's when the pod's status has one, else from the spec,
 * quantities compared by value. Regression: a static pod whose file spells a request and its limit differently ("500m"
 * and "0.5") was Burstable here and Guaranteed to the apiserver, so every status write of its mirror pod changed
 * `status.qosClass`, which the apiserver refuses — and its containers ran in the wrong QoS cgroup.
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../../src/api/types.js';
import { qosClass } from '../../../src/agent/status/qos-class.js';

const pod = (containers: Partial<Container>[], extra: Partial<Pod['spec']> = {}, status?: object): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u' },
  spec: { containers: containers.map((c, i) => ({ name: `c${i}`, image: 'i', ...c })), ...extra },
  ...(status ? { status } : {}),
});

describe('qosClass', () => {
  it('compares a request with its limit by value, as Go quantities', () => {
    const spelled = { requests: { cpu: '500m', memory: '134217728' }, limits: { cpu: '0.5', memory: '128Mi' } };
    expect(qosClass(pod([{ resources: spelled }]))).toBe('Guaranteed');
    expect(qosClass(pod([{ resources: { requests: { cpu: '1' }, limits: { cpu: '1000m', memory: '1Gi' } } }]))).toBe(
      'Guaranteed',
    );
    expect(qosClass(pod([{ resources: { requests: { cpu: '999m' }, limits: { cpu: '1', memory: '1Gi' } } }]))).toBe(
      'Burstable',
    );
  });

  it('takes a missing request as its limit (the apiserver defaults it so); zero asks for nothing', () => {
    expect(qosClass(pod([{ resources: { limits: { cpu: '1', memory: '1Gi' } } }]))).toBe('Guaranteed');
    expect(qosClass(pod([{ resources: { requests: { cpu: '0', memory: '0' } } }]))).toBe('BestEffort');
    expect(qosClass(pod([{ resources: { requests: { 'ephemeral-storage': '1Gi' } } }]))).toBe('BestEffort');
    expect(qosClass(pod([{}]))).toBe('BestEffort');
  });

  it('is Burstable when containers differ, and decided by pod-level resources when the pod has them', () => {
    const guaranteed = { limits: { cpu: '1', memory: '1Gi' } };
    expect(qosClass(pod([{ resources: guaranteed }, {}]))).toBe('Burstable');
    expect(qosClass(pod([{ resources: guaranteed }], { initContainers: [{ name: 'i', image: 'i' }] }))).toBe(
      'Burstable',
    );
    expect(qosClass(pod([{}], { resources: guaranteed } as Partial<Pod['spec']>))).toBe('Guaranteed');
    expect(
      qosClass(pod([{ resources: guaranteed }], { resources: { requests: { cpu: '1' } } } as Partial<Pod['spec']>)),
    ).toBe('Burstable');
  });

  it("is the apiserver's class when the pod's status has one", () => {
    expect(qosClass(pod([{}], {}, { qosClass: 'Burstable' }))).toBe('Burstable');
    expect(qosClass(pod([{}], {}, { qosClass: 'nonsense' }))).toBe('BestEffort');
  });
});
