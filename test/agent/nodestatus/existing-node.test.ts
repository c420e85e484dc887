/**
 * A kubelet that finds its Node already registered (409 on create) brings what it owns on it up to date, as upstream's
 * tryRegisterWithAPIServer: its default labels and the controller-managed attach-detach annotation, which tells the
 * attach/detach controller to attach the node's volumes. What others set on the Node stays.
 */
import { describe, expect, it } from 'vitest';
import { existingNodeMetadataPatch } from '../../../src/agent/nodestatus/node-object.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';
import { startRegistering, testNodeSettings } from './node-fixture.js';

const fake = useFakeApiserver();
const ATTACH = 'volumes.kubernetes.io/controller-managed-attach-detach';

describe('a Node registered before the kubelet started', () => {
  it('gets the kubelet’s labels and the attach-detach annotation; labels and annotations others set stay', async () => {
    const nodeName = 'registered-before';
    fake.api.store.create('nodes', {
      metadata: {
        name: nodeName,
        labels: { 'kubernetes.io/hostname': 'old-name', 'team.example/owner': 'ops' },
        annotations: { 'node.alpha.kubernetes.io/ttl': '0' },
      },
    });
    const stop = await startRegistering(fake.kubeconfigFor(`system:node:${nodeName}`), nodeName);
    const metadata = () => fake.api.store.get('nodes', '', nodeName)!.metadata;
    const status = () => fake.api.store.get('nodes', '', nodeName)!.status;
    await until(() => status()?.conditions !== undefined, 5000, 'the first status report');
    stop();
    expect(metadata().annotations).toEqual({ 'node.alpha.kubernetes.io/ttl': '0', [ATTACH]: 'true' });
    expect(metadata().labels).toMatchObject({
      'kubernetes.io/hostname': testNodeSettings(nodeName).hostname,
      'kubernetes.io/os': 'linux',
      'team.example/owner': 'ops',
    });
  });

  it('is not patched when nothing the kubelet owns differs', () => {
    const own = { 'kubernetes.io/hostname': 'h', 'kubernetes.io/os': 'linux' };
    expect(existingNodeMetadataPatch(own, { labels: { ...own, other: 'x' }, annotations: { [ATTACH]: 'true' } })).toBe(
      undefined,
    );
    expect(existingNodeMetadataPatch(own, { labels: own, annotations: {} })).toEqual({
      annotations: { [ATTACH]: 'true' },
    });
    expect(existingNodeMetadataPatch(own, { annotations: { [ATTACH]: 'true' } })).toEqual({ labels: own });
  });
});
