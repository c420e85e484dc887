/**
 * Quantities added up exactly and spelled as Go's Quantity.String(), and a pod's requests and limits added up as
 * upstream's resourcehelper.PodRequests and PodLimits (init containers, sidecars, pod-level resources, overhead).
 */
import { describe, expect, it } from 'vitest';
import { formatNanoUnits, nanoUnits, quantityFormat } from '../../src/api/quantity.js';
import { podResourceLimits, podResourceRequests } from '../../src/api/pod-resources.js';
import type { Container, Pod } from '../../src/api/types.js';

describe('nanoUnits and formatNanoUnits', () => {
  it('parse exactly and spell as Go canonicalizes', () => {
    const spell = (q: string) => formatNanoUnits(nanoUnits(q)!, quantityFormat(q));
    expect(spell('0.5')).toBe('500m');
    expect(spell('1.5')).toBe('1500m');
    expect(spell('2000m')).toBe('2');
    expect(spell('100000')).toBe('100k');
    expect(spell('1e3')).toBe('1k');
    expect(spell('1024Mi')).toBe('1Gi');
    expect(spell('0.5Ki')).toBe('512');
    expect(spell('1.5Gi')).toBe('1536Mi');
    expect(spell('0')).toBe('0');
    expect(nanoUnits('0.1')! + nanoUnits('0.2')!).toBe(nanoUnits('300m'));
    expect(nanoUnits('1n')).toBe(1n);
    expect(nanoUnits('0.0000000001')).toBe(1n); // below nano precision: rounded up, as upstream
    expect(nanoUnits('12x')).toBeUndefined();
    expect(nanoUnits('.')).toBeUndefined();
  });
});

const container = (name: string, resources: Container['resources'], restartPolicy?: 'Always'): Container => ({
  name,
  image: 'busybox',
  resources,
  ...(restartPolicy ? { restartPolicy } : {}),
});
const pod = (spec: Partial<Pod['spec']>): Pod => ({ metadata: { name: 'p' }, spec: { containers: [], ...spec } });

describe('podResourceRequests and podResourceLimits', () => {
  it('add up regular containers and sidecars, against each init container with the sidecars started before it', () => {
    const p = pod({
      initContainers: [
        container('init-small', { requests: { cpu: '100m' } }),
        container('sidecar', { requests: { cpu: '200m', memory: '64Mi' } }, 'Always'),
        container('init-big', { requests: { cpu: '1', memory: '32Mi' }, limits: { memory: '1Gi' } }),
      ],
      containers: [
        container('web', { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } }),
        container('worker', {}),
      ],
    });
    // cpu: max(50m + 200m, 100m, 1 + 200m); memory: max(32Mi + 64Mi, 32Mi + 64Mi).
    expect(podResourceRequests(p)).toEqual({ cpu: '1200m', memory: '96Mi' });
    // memory limits: max(128Mi, 1Gi) — the sidecar has none.
    expect(podResourceLimits(p)).toEqual({ memory: '1Gi' });
  });

  it('take pod-level cpu and memory in place of the sum, and add the overhead (to limits only where set)', () => {
    const p = pod({
      resources: { requests: { cpu: '2', memory: '1Gi' }, limits: { cpu: '4' } },
      overhead: { cpu: '250m', memory: '120Mi' },
      containers: [
        container('main', {
          requests: { cpu: '1', 'ephemeral-storage': '1Gi' },
          limits: { 'ephemeral-storage': '2Gi' },
        }),
      ],
    });
    expect(podResourceRequests(p)).toEqual({ cpu: '2250m', memory: '1144Mi', 'ephemeral-storage': '1Gi' });
    expect(podResourceLimits(p)).toEqual({ cpu: '4250m', 'ephemeral-storage': '2Gi' });
    expect(podResourceRequests(pod({ containers: [container('c', {})] }))).toEqual({});
  });
});
