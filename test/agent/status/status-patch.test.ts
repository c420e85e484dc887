/**
 * The two-way status patch (issue 13 item 11): pure tables, then the status syncer against the fake
 * apiserver's strategic-merge semantics — a recreated sandbox's new IP replaces the old one
 * (before: both merged, then 422 on every write), a condition that turns True loses its stale
 * reason and message, and conditions other writers own are kept.
 */
import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '../../../src/api/types.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { createLogger } from '../../../src/lib/logger.js';
import { realClock } from '../../../src/lib/clock.js';
import { PodManager } from '../../../src/agent/pods/pod-manager.js';
import { StatusManager } from '../../../src/agent/status/status-manager.js';
import { StatusSync } from '../../../src/agent/status/status-sync.js';
import { mergePodStatus, twoWayMergePatch } from '../../../src/agent/status/status-patch.js';
import { strategicMerge } from '../../fixtures/apiserver/patch.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';

describe('twoWayMergePatch', () => {
  it.each([
    ['equal → empty', { phase: 'Running' }, { phase: 'Running' }, {}],
    ['scalar change', { phase: 'Pending' }, { phase: 'Running' }, { phase: 'Running' }],
    ['removed field → null', { phase: 'Running', message: 'x' }, { phase: 'Running' }, { message: null }],
    [
      'new IP replaces the old one',
      { podIP: '10.0.0.7', podIPs: [{ ip: '10.0.0.7' }] },
      { podIP: '10.0.0.8', podIPs: [{ ip: '10.0.0.8' }] },
      {
        podIP: '10.0.0.8',
        '$setElementOrder/podIPs': [{ ip: '10.0.0.8' }],
        podIPs: [{ ip: '10.0.0.8' }, { ip: '10.0.0.7', $patch: 'delete' }],
      },
    ],
    [
      'condition turns True: reason and message removed',
      { conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'm' }] },
      { conditions: [{ type: 'Ready', status: 'True' }] },
      {
        '$setElementOrder/conditions': [{ type: 'Ready' }],
        conditions: [{ type: 'Ready', status: 'True', reason: null, message: null }],
      },
    ],
    [
      'atomic list sent whole',
      { containerStatuses: [{ name: 'a', ready: false }] },
      { containerStatuses: [{ name: 'a', ready: true }] },
      { containerStatuses: [{ name: 'a', ready: true }] },
    ],
    ['nested object diffed', { x: { a: 1, b: 2 } }, { x: { a: 1 } }, { x: { b: null } }],
  ])('%s', (_n, oldO, newO, want) => {
    const p = twoWayMergePatch(oldO, newO);
    expect(p).toEqual(want);
    expect(strategicMerge(oldO, p)).toEqual(newO);
  });

  it('mergePodStatus keeps the start time the apiserver has (a static pod synced before its mirror pod was known after a restart)', () => {
    const merged = mergePodStatus(
      { phase: 'Running', startTime: '2026-11-20T08:00:00Z' },
      { phase: 'Running', startTime: '2026-11-25T12:00:00Z' },
    );
    expect(merged.startTime).toBe('2026-11-20T08:00:00Z');
    expect(
      mergePodStatus({ phase: 'Pending' }, { phase: 'Running', startTime: '2026-11-25T12:00:00Z' }).startTime,
    ).toBe('2026-11-25T12:00:00Z');
  });

  it("leaves the claim statuses the resource claim controller and the scheduler wrote (regression: the kubelet's patch removed them)", () => {
    const api = {
      phase: 'Pending',
      resourceClaimStatuses: [{ name: 'gpu', resourceClaimName: 'p-gpu-x1y2z' }],
      extendedResourceClaimStatus: {
        resourceClaimName: 'p-extended-resources-abcde',
        requestMappings: [
          { containerName: 'main', resourceName: 'example.com/gpu', requestName: 'container-0-request-0' },
        ],
      },
    } as PodStatus;
    const merged = mergePodStatus(api, { phase: 'Running' });
    expect(merged).toMatchObject({
      resourceClaimStatuses: (api as { resourceClaimStatuses: unknown }).resourceClaimStatuses,
      extendedResourceClaimStatus: (api as { extendedResourceClaimStatus: unknown }).extendedResourceClaimStatus,
    });
    expect(twoWayMergePatch(api as Record<string, unknown>, merged as Record<string, unknown>)).toEqual({
      phase: 'Running',
    });
  });

  it('null and absent are the same (a Go nil): a condition the apiserver returns without lastProbeTime needs no patch, nor one with it null', () => {
    const api = { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 't' }] };
    const mine = { conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: 't' }] };
    expect(twoWayMergePatch(api, mine)).toEqual({});
    expect(twoWayMergePatch(mine, api)).toEqual({});
    expect(twoWayMergePatch({ reason: null }, { reason: 'Evicted' })).toEqual({ reason: 'Evicted' });
  });
  it('keeps conditions other writers own', () => {
    const api: PodStatus = {
      conditions: [
        { type: 'example.com/gate', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
    };
    expect(
      mergePodStatus(api, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }).conditions,
    ).toEqual([
      { type: 'example.com/gate', status: 'True' },
      { type: 'Ready', status: 'True' },
    ]);
  });
});

const fake = useFakeApiserver();

describe('StatusSync with two-way patches against the fake apiserver', () => {
  it("a recreated sandbox's IP replaces the old one; a condition turning True drops its stale reason", async () => {
    const podManager = new PodManager();
    const statusManager = new StatusManager();
    const sync = new StatusSync({
      client: await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 }),
      statusManager,
      podManager,
      clock: realClock,
      logger: createLogger({ level: 'fatal' }),
      canBeDeleted: () => false,
    });
    const pod = fake.api.store.create('pods', {
      metadata: { name: 'p', namespace: 'default' },
      spec: {
        nodeName: 'n1',
        readinessGates: [{ conditionType: 'example.com/gate' }],
        containers: [{ name: 'c', image: 'i' }],
      },
      status: { phase: 'Pending' },
    }) as Pod;
    podManager.addOrUpdate(pod);
    const uid = pod.metadata.uid!;
    const st = (ip: string, ready: boolean): PodStatus => ({
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [
        ready
          ? { type: 'Ready', status: 'True' }
          : {
              type: 'Ready',
              status: 'False',
              reason: 'ContainersNotReady',
              message: 'containers with unready status: [c]',
            },
      ],
    });
    statusManager.set(uid, st('10.0.0.7', false));
    expect(await sync.pass()).toBe(0);
    // Someone else sets the readiness gate's condition through the status subresource.
    const cur = fake.api.store.get('pods', 'default', 'p')!;
    fake.api.store.update('pods', {
      ...cur,
      status: { ...cur.status, conditions: [...cur.status.conditions, { type: 'example.com/gate', status: 'True' }] },
    });
    statusManager.set(uid, st('10.0.0.8', true));
    expect(await sync.pass()).toBe(0);
    const s = fake.api.store.get('pods', 'default', 'p')!.status;
    expect(s.podIPs).toEqual([{ ip: '10.0.0.8' }]);
    expect(s.podIP).toBe('10.0.0.8');
    expect(s.conditions).toEqual(
      expect.arrayContaining([
        { type: 'Ready', status: 'True' },
        { type: 'example.com/gate', status: 'True' },
      ]),
    );
    expect(s.conditions.find((c: { type: string }) => c.type === 'Ready')).toEqual({ type: 'Ready', status: 'True' });
    statusManager.set(uid, { ...st('10.0.0.8', true), phase: 'Succeeded' });
    expect(await sync.pass()).toBe(0);
    expect(fake.api.store.get('pods', 'default', 'p')!.status.phase).toBe('Succeeded');
    expect(
      fake.api.requests
        .filter((r) => r.method === 'PATCH')
        .every((r) => r.contentType === 'application/strategic-merge-patch+json'),
    ).toBe(true);
  });
});
