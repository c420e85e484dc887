/** The pod-resources API with a real grpc-js client: List names the active pods only, Get answers for any. */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../src/api/types.js';
import { servePodResources } from '../../src/server/pod-resources.js';
import { podResourcesClient } from '../e2e/pod-resources-client.js';

const root = mkdtempSync(join(tmpdir(), 'tsk-podres-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const pod = (name: string, phase: string): Pod =>
  ({
    metadata: { name, namespace: 'default', uid: name },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
    status: { phase },
  }) as Pod;

describe('pod-resources List and Get', () => {
  it('lists the active pods only (KubeletPodResourcesListUseActivePods) and gets a finished one', async () => {
    const pods = [
      pod('running', 'Running'),
      pod('pending', 'Pending'),
      pod('done', 'Succeeded'),
      pod('broke', 'Failed'),
    ];
    const stop = await servePodResources(join(root, 'pod-resources', 'kubelet.sock'), { pods: () => pods });
    const { client, call } = await podResourcesClient(root);
    try {
      const list = await call<{ pod_resources: { name: string }[] }>('List', {});
      expect(list.pod_resources.map((p) => p.name).sort()).toEqual(['pending', 'running']);
      expect(await call('Get', { pod_name: 'done', pod_namespace: 'default' })).toMatchObject({
        pod_resources: { name: 'done' },
      });
    } finally {
      client.close();
      await stop();
    }
  });
});
