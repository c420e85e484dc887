/**
 * --cloud-provider=external, as upstream: the Node registers with the uninitialized taint and the
 * provided-node-ip annotation for the cloud controller manager, and once that manager has set the
 * Node's addresses the kubelet's status updates keep them. The manager is played with kubectl.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl, startCluster, type Cluster } from './cluster-helpers.js';
import { until } from './helpers.js';

const node = 'cloud-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-cloud-'));
let c: Cluster;
type Obj = Record<string, any>;
const theNode = () => c.api.store.get('nodes', '', node) as Obj | undefined;

beforeAll(async () => {
  c = await startCluster({
    dir,
    node,
    config: ['nodeStatusUpdateFrequency: 1s', 'nodeStatusReportFrequency: 1s'],
    extra: ['--cloud-provider=external'],
  });
}, 60_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('--cloud-provider=external', () => {
  it('registers uninitialized, with the IP the operator named for the cloud controller manager', async () => {
    const n = await until(() => theNode()?.status?.addresses && theNode(), 20_000, 'node with status');
    expect(n.spec.taints).toEqual([
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
    ]);
    expect(n.metadata.annotations['alpha.kubernetes.io/provided-node-ip']).toBe('127.0.0.1');
    expect(n.status.addresses).toEqual([
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: node },
    ]);
  });

  it('keeps the addresses the cloud controller manager sets across its status updates', async () => {
    const cloud = [
      { type: 'InternalIP', address: '10.1.2.3' },
      { type: 'ExternalIP', address: '203.0.113.7' },
      { type: 'Hostname', address: `${node}.cloud.internal` },
    ];
    const r = await kubectl(c, [
      'patch',
      'node',
      node,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { addresses: cloud } }),
    ]);
    expect(r.stderr).toBe('');
    const patches = () =>
      c.api.requests.filter(
        (x) => x.method === 'PATCH' && x.path === `/api/v1/nodes/${node}/status` && x.user === `system:node:${node}`,
      ).length;
    const before = patches();
    await until(() => patches() >= before + 3, 20_000, 'three more status updates');
    expect(theNode()!.status.addresses).toEqual(cloud);
  });
});
