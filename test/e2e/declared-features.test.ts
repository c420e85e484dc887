/**
 * Node Declared Features on a kubelet whose RestartAllContainersOnContainerExits gate is off (the
 * fake apiserver, embedded runtime): the Node does not declare the feature, and a pod that needs it
 * (a RestartAllContainers restart rule) is refused at admission with upstream's reason and message,
 * in its status, its event and the rejection metric, while a pod without such a rule runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { httpGet, until } from './helpers.js';

const node = 'ndf-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ndf-'));
let c: Cluster;
type Obj = Record<string, any>;
const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;

beforeAll(async () => {
  c = await startCluster({ dir, node, extra: ['--feature-gates=RestartAllContainersOnContainerExits=false'] });
  await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
}, 30_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a feature the node does not declare', () => {
  it('is left out of status.declaredFeatures; a pod that needs it is refused, one that does not runs', async () => {
    // The Node is created first and its status patched after.
    const declared = await until(
      () => (c.api.store.get('nodes', '', node) as Obj | undefined)?.status?.declaredFeatures as string[] | undefined,
      20_000,
      'the node status',
    );
    expect(declared).toContain('ExtendWebSocketsToKubelet');
    expect(declared).not.toContain('RestartAllContainersOnContainerExits');
    const main = { name: 'main', image: 'busybox', command: ['sleep', '3600'] };
    c.api.store.create(
      'pods',
      boundPod('restart-all', node, {
        containers: [
          {
            ...main,
            restartPolicy: 'Never',
            restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }],
          },
        ],
      }),
    );
    c.api.store.create('pods', boundPod('plain', node, { containers: [main] }));
    expect(
      await until(
        () => pod('restart-all')?.status?.phase === 'Failed' && pod('restart-all')!.status,
        20_000,
        'refused',
      ),
    ).toMatchObject({
      reason: 'PodFeatureUnsupported',
      message:
        'Pod was rejected: Pod requires node features that are not available: RestartAllContainersOnContainerExits',
    });
    await until(() => pod('plain')?.status?.phase === 'Running', 20_000, 'plain running');
    const events = await until(
      () =>
        (c.api.store.list('events', (e: Obj) => e.involvedObject?.name === 'restart-all') as Obj[]).find(
          (e) => e.reason === 'PodFeatureUnsupported',
        ),
      10_000,
      'the rejection event',
    );
    expect(events).toMatchObject({
      type: 'Warning',
      message: 'Pod requires node features that are not available: RestartAllContainersOnContainerExits',
    });
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toContain('kubelet_admission_rejections_total{reason="PodFeatureUnsupported"} 1\n');
  }, 60_000);
});
