/**
 * allocatableMemory.available on containerd (real runc, real cgroups): with Node Allocatable enforced on the pods and
 * most of the node's memory reserved, the pods' cgroup is capped at 400 MiB; a pod that fills a memory-backed emptyDir
 * to within the hard memory.available threshold (100 MiB) of that cap is evicted as upstream evicts it, though the
 * node itself has gigabytes free: MemoryPressure, phase Failed / Evicted, upstream's message, the Evicted event with
 * upstream's annotations and kubelet_evictions{eviction_signal="allocatableMemory.available"}.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CriRuntime } from '../../src/cri/services.js';
import { TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import { httpGet, until } from '../e2e/helpers.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';

const node = 'ctrd-allocatable-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-alloc-'));
const memTotalKi = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]);
// What is reserved leaves the pods' cgroup 400 MiB.
const reservedKi = memTotalKi - 400 * 1024;
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;

beforeAll(
  async () =>
    ({ ctrd, cri, c } = await startContainerdCluster({
      dir,
      node,
      config: [`systemReserved: {memory: ${reservedKi}Ki}`, 'enforceNodeAllocatable: [pods]'],
    })),
  60_000,
);
afterAll(() => stopContainerdCluster({ ctrd, cri, c, dir }), 90_000);

const status = (name: string) => c.api.store.get('pods', 'default', name)?.status as any;

describe('allocatable memory eviction on containerd', () => {
  it("evicts a pod that brings the pods' cgroup within the threshold of Node Allocatable", async () => {
    c.api.store.create(
      'pods',
      boundPod('filler', node, {
        terminationGracePeriodSeconds: 1,
        // Two: a memory-backed emptyDir's size is Node Allocatable (300 MiB here).
        volumes: [
          { name: 'ram', emptyDir: { medium: 'Memory' } },
          { name: 'more', emptyDir: { medium: 'Memory' } },
        ],
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            // 330 MiB of tmpfs pages, charged to the container's cgroup, then held.
            command: [
              'sh',
              '-c',
              'dd if=/dev/zero of=/ram/fill bs=1M count=200 && dd if=/dev/zero of=/more/fill bs=1M count=130 && sleep 3600',
            ],
            volumeMounts: [
              { name: 'ram', mountPath: '/ram' },
              { name: 'more', mountPath: '/more' },
            ],
          },
        ],
      }),
    );
    await until(() => status('filler')?.phase === 'Failed', 90_000, 'filler evicted');
    const evicted = status('filler');
    expect(evicted.reason).toBe('Evicted');
    expect(evicted.message).toMatch(
      /^The node was low on resource: memory\. Threshold quantity: 100Mi, available: \d+(Ki|Mi)?\. Container main was using \d+(Ki|Mi)?, request is 0, has larger consumption of memory\. $/,
    );
    // The kubepods cap was set at start, with upstream's event on the Node.
    const nodeEvents = c.api.store.list('events').filter((e: any) => e.involvedObject?.kind === 'Node');
    expect(nodeEvents.find((e: any) => e.reason === 'NodeAllocatableEnforced')).toMatchObject({
      type: 'Normal',
      message: 'Updated Node Allocatable limit across pods',
    });
    const nodeConditions = (c.api.store.get('nodes', '', node) as any).status.conditions;
    expect(nodeConditions.find((x: { type: string }) => x.type === 'MemoryPressure')?.status).toBe('True');
    const events = c.api.store.list('events').filter((e: any) => e.involvedObject?.name === 'filler');
    const evictedEvent = events.find((e: any) => e.reason === 'Evicted' && e.type === 'Warning');
    expect(evictedEvent?.message).toBe(evicted.message);
    // What upstream's node e2e eviction tests read: the container, what it used, the starved resource.
    expect(evictedEvent?.metadata?.annotations).toMatchObject({
      offending_containers: 'main',
      starved_resource: 'memory',
    });
    expect(evictedEvent?.metadata?.annotations?.offending_containers_usage).toMatch(/^\d+(Ki|Mi)$/);
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toMatch(/^kubelet_evictions\{eviction_signal="allocatableMemory.available"\} 1$/m);
  }, 120_000);
});
