/**
 * A kubelet that starts without a device checkpoint (a new root dir, a recreated node) on an existing Node zeroes its
 * extended resources at registration, as upstream's reconcileExtendedResource: what the Node advertises is not known
 * to be there until its plugins register again. With a checkpoint, the Node keeps them.
 */
import { describe, expect, it } from 'vitest';
import { zeroedExtendedResources } from '../../../src/agent/nodestatus/advertised-resources.js';
import { isExtendedResource } from '../../../src/agent/admission/extended-resources.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';
import { startRegistering } from './node-fixture.js';

const fake = useFakeApiserver();

async function registerOn(nodeName: string, reset: boolean) {
  fake.api.store.create('nodes', {
    metadata: { name: nodeName, labels: { 'kubernetes.io/hostname': nodeName } },
    status: {
      capacity: { cpu: '2', 'example.com/widget': '4', 'hugepages-2Mi': '0' },
      allocatable: { cpu: '2', 'example.com/widget': '3', 'hugepages-2Mi': '0' },
    },
  });
  const stop = await startRegistering(fake.kubeconfigFor(`system:node:${nodeName}`), nodeName, {
    resetExtendedResources: () => reset,
  });
  const status = () => fake.api.store.get('nodes', '', nodeName)!.status as Record<string, Record<string, string>>;
  await until(() => status().conditions !== undefined, 5000, 'the first status report');
  stop();
  return status();
}

describe('extended resources of an existing Node at registration', () => {
  it('are zeroed when the kubelet started without a device checkpoint', async () => {
    const status = await registerOn('recreated', true);
    expect(status.capacity['example.com/widget']).toBe('0');
    expect(status.allocatable['example.com/widget']).toBe('0');
  });

  it('are kept when it had one', async () => {
    const status = await registerOn('restarted', false);
    expect(status.capacity['example.com/widget']).toBe('4');
    expect(status.allocatable['example.com/widget']).toBe('4');
  });

  it('are the fully qualified names outside the kubernetes.io domains', () => {
    expect(
      [
        'example.com/widget',
        'nvidia.com/gpu',
        'cpu',
        'hugepages-2Mi',
        'kubernetes.io/x',
        'a.kubernetes.io/y',
        'requests.example.com/z',
      ].filter(isExtendedResource),
    ).toEqual(['example.com/widget', 'nvidia.com/gpu']);
    expect(zeroedExtendedResources({ capacity: { cpu: '2' } })).toBeUndefined();
  });
});
