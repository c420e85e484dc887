/** The pod-resources API with a real grpc-js client: List names the active pods only, Get answers for any. */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Pod } from '../../src/api/types.js';
import { KubeletMetrics } from '../../src/agent/metrics/kubelet-metrics.js';
import { registerPodResourcesMetrics } from '../../src/agent/metrics/pod-resources-metrics.js';
import { TokenBucket } from '../../src/lib/token-bucket.js';
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

  it("fails Get of an unknown pod with upstream's error, and counts every call and error as upstream's metrics", async () => {
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    const dir = mkdtempSync(join(root, 'metrics-'));
    const stop = await servePodResources(join(dir, 'pod-resources', 'kubelet.sock'), {
      pods: () => [pod('running', 'Running')],
      onCall: registerPodResourcesMetrics(metrics),
    });
    const { client, call } = await podResourcesClient(dir);
    try {
      await call('List', {});
      await call('GetAllocatableResources', {});
      await call('Get', { pod_name: 'running', pod_namespace: 'default' });
      // Go's plain error: gRPC Unknown, with upstream's message.
      await expect(call('Get', { pod_name: 'nope', pod_namespace: 'default' })).rejects.toMatchObject({
        code: grpc.status.UNKNOWN,
        details: 'pod nope in namespace default not found',
      });
      const text = metrics.text();
      const value = (name: string) => new RegExp(`^${name}\\{server_api_version="v1"\\} (\\d+)$`, 'm').exec(text)?.[1];
      expect(value('kubelet_pod_resources_endpoint_requests_total')).toBe('4');
      expect(value('kubelet_pod_resources_endpoint_requests_list')).toBe('1');
      expect(value('kubelet_pod_resources_endpoint_requests_get_allocatable')).toBe('1');
      expect(value('kubelet_pod_resources_endpoint_requests_get')).toBe('2');
      expect(value('kubelet_pod_resources_endpoint_errors_get')).toBe('1');
      expect(value('kubelet_pod_resources_endpoint_errors_list')).toBeUndefined();
      expect(text).toContain('# TYPE kubelet_pod_resources_endpoint_errors_get_allocatable counter');
    } finally {
      client.close();
      await stop();
    }
  });

  it('refuses calls beyond the rate limit with ResourceExhausted, as upstream, and serves again once it refills', async () => {
    let now = 1_000_000;
    const dir = mkdtempSync(join(root, 'limit-'));
    const calls: string[] = [];
    const stop = await servePodResources(join(dir, 'pod-resources', 'kubelet.sock'), {
      pods: () => [pod('running', 'Running')],
      // Upstream's 100 a second with a burst of 10, on a clock that stands still until told.
      limiter: new TokenBucket(100, 10, () => now),
      onCall: (method) => calls.push(method),
    });
    const { client, call } = await podResourcesClient(dir);
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 12 }, () => call('List', {})));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(10);
      for (const o of outcomes.filter((o) => o.status === 'rejected'))
        expect(o.reason).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'rejected by rate limit' });
      // A refused call reaches neither the server nor its metrics.
      expect(calls).toHaveLength(10);
      now += 10; // 10 ms: one token
      await expect(call('List', {})).resolves.toMatchObject({ pod_resources: [{ name: 'running' }] });
      await expect(call('List', {})).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    } finally {
      client.close();
      await stop();
    }
  });

  it('throttles a tight loop of calls with the default limit (upstream e2e)', async () => {
    const dir = mkdtempSync(join(root, 'tight-'));
    const stop = await servePodResources(join(dir, 'pod-resources', 'kubelet.sock'), { pods: () => [] });
    const { client, call } = await podResourcesClient(dir);
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 100 }, () => call('List', {})));
      const refused = outcomes.filter((o) => o.status === 'rejected');
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0].reason).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    } finally {
      client.close();
      await stop();
    }
  });
});
