/**
 * The status syncer against the fake apiserver: only new versions are written, as strategic-merge
 * PATCHes with the UID precondition that keep conditions other writers own; a pod replaced under
 * the same name (409) or gone (404) is not retried; failures are retried; the final DELETE waits
 * for the containers and for the last status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { createLogger } from '../../../src/lib/logger.js';
import { realClock } from '../../../src/lib/clock.js';
import { PodManager } from '../../../src/agent/pods/pod-manager.js';
import { StatusManager } from '../../../src/agent/status/status-manager.js';
import { StatusSync } from '../../../src/agent/status/status-sync.js';
import { startFakeWithKubeconfig, type FakeKubeApiserver } from '../../fixtures/apiserver/server.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-ss-'));
let api: FakeKubeApiserver;
let kubeconfig: string;

beforeAll(async () => ({ api, kubeconfig } = await startFakeWithKubeconfig(dir, { user: 'system:node:n1' })));
afterAll(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

const apiPod = (name: string) =>
  api.store.create('pods', {
    metadata: { name, namespace: 'default' },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
    status: { phase: 'Pending', conditions: [{ type: 'DisruptionTarget', status: 'False' }] },
  }) as Pod;
const running = {
  phase: 'Running' as const,
  conditions: [{ type: 'Ready', status: 'True' as const }],
  podIP: '10.0.0.7',
};

/** A syncer over a fresh pod manager and status manager. */
async function syncer(
  o: Pick<ConstructorParameters<typeof StatusSync>[0], 'canBeDeleted' | 'observeSync' | 'couldHaveRunningContainers'>,
) {
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  const client = await createKubeClient(kubeconfig, { timeoutMs: 3000 });
  const sync = new StatusSync({
    client,
    statusManager,
    podManager,
    clock: realClock,
    logger: createLogger({ level: 'fatal' }),
    ...o,
  });
  return { podManager, statusManager, sync };
}

describe('StatusSync', () => {
  it('writes new versions only, merges conditions, handles 409/404 without retrying, retries failures, then deletes', async () => {
    const finished = new Set<string>();
    const { podManager, statusManager, sync } = await syncer({ canBeDeleted: (uid) => finished.has(uid) });
    const a = apiPod('a');
    const gone = apiPod('gone');
    const replaced = apiPod('replaced');
    for (const p of [a, gone, replaced]) {
      podManager.addOrUpdate(p);
      statusManager.set(p.metadata.uid!, running);
    }
    api.store.remove('pods', 'default', 'gone');
    api.store.remove('pods', 'default', 'replaced');
    apiPod('replaced');
    const patches = () => api.requests.filter((r) => r.method === 'PATCH');
    expect(await sync.pass()).toBe(0);
    expect(
      patches()
        .map((r) => r.path)
        .sort(),
    ).toEqual([
      '/api/v1/namespaces/default/pods/a/status',
      '/api/v1/namespaces/default/pods/gone/status',
      '/api/v1/namespaces/default/pods/replaced/status',
    ]);
    expect(api.store.get('pods', 'default', 'a')!.status).toMatchObject({
      phase: 'Running',
      podIP: '10.0.0.7',
      conditions: [
        { type: 'DisruptionTarget', status: 'False' },
        { type: 'Ready', status: 'True' },
      ],
    });
    expect(api.store.get('pods', 'default', 'replaced')!.status.phase).toBe('Pending');
    await sync.pass();
    expect(patches()).toHaveLength(3);

    api.inject((r) => (r.method === 'PATCH' ? { code: 500, reason: 'InternalError' } : undefined));
    statusManager.set(a.metadata.uid!, { ...running, phase: 'Succeeded' });
    expect(await sync.pass()).toBe(1);
    api.inject(undefined);
    expect(await sync.pass()).toBe(0);
    expect(api.store.get('pods', 'default', 'a')!.status.phase).toBe('Succeeded');

    const deleting = {
      ...a,
      metadata: { ...a.metadata, deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: 30 },
    };
    podManager.addOrUpdate(deleting);
    await sync.pass();
    expect(api.store.get('pods', 'default', 'a')).toBeDefined();
    finished.add(a.metadata.uid!);
    await sync.pass();
    expect(api.store.get('pods', 'default', 'a')).toBeUndefined();
    expect(api.requests.find((r) => r.method === 'DELETE')!.body).toMatchObject({
      gracePeriodSeconds: 0,
      preconditions: { uid: a.metadata.uid },
    });
  });

  it('observes kubelet_pod_status_sync_duration_seconds from the first unwritten change to the write that carries it, once per write, not for a pod gone', async () => {
    const observed: number[] = [];
    const { podManager, statusManager, sync } = await syncer({
      canBeDeleted: () => false,
      observeSync: (s) => observed.push(s),
    });
    const p = apiPod('timed');
    const gone = apiPod('timed-gone');
    podManager.addOrUpdate(p);
    podManager.addOrUpdate(gone);
    api.store.remove('pods', 'default', 'timed-gone');
    statusManager.set(gone.metadata.uid!, running);
    statusManager.set(p.metadata.uid!, running);
    await new Promise((r) => setTimeout(r, 60));
    statusManager.set(p.metadata.uid!, { ...running, podIP: '10.0.0.8' });
    await sync.pass();
    // One write carried both changes: timed from the first; the pod gone (404) adds nothing.
    expect(observed).toHaveLength(1);
    expect(observed[0]).toBeGreaterThanOrEqual(0.06);
    statusManager.set(p.metadata.uid!, { ...running, podIP: '10.0.0.9' });
    await sync.pass();
    await sync.pass();
    expect(observed).toHaveLength(2);
    expect(observed[1]).toBeLessThan(observed[0]);
  });

  it('holds back a terminal phase (and a new DisruptionTarget) while the pod could have running containers; sends it once they are stopped (upstream mergePodStatus)', async () => {
    let running = true;
    const { podManager, statusManager, sync } = await syncer({
      canBeDeleted: () => false,
      couldHaveRunningContainers: () => running,
    });
    const p = api.store.create('pods', {
      metadata: { name: 'evicted', namespace: 'default' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
      status: { phase: 'Running' },
    }) as Pod;
    podManager.addOrUpdate(p);
    const disruption = {
      type: 'DisruptionTarget',
      status: 'True' as const,
      reason: 'TerminationByKubelet',
      message: 'x',
    };
    statusManager.set(p.metadata.uid!, {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
      conditions: [{ type: 'Ready', status: 'False', reason: 'PodFailed' }, disruption],
    });
    expect(await sync.pass()).toBe(0);
    const st = () => api.store.get('pods', 'default', 'evicted')!.status;
    expect(st().phase).toBe('Running');
    expect(st().reason).toBeUndefined();
    expect(st().conditions.map((c: { type: string }) => c.type)).toEqual(['Ready']);
    const writes = () => api.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/evicted/status')).length;
    const before = writes();
    expect(await sync.pass()).toBe(0);
    expect(writes()).toBe(before);
    running = false;
    expect(await sync.pass()).toBe(0);
    expect(st()).toMatchObject({
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
    expect(st().conditions.find((c: { type: string }) => c.type === 'DisruptionTarget')).toMatchObject(disruption);
  });
});
