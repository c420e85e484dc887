/**
 * The Static memory manager policy on containerd (real runc): a Guaranteed pod's container is
 * created with its NUMA node as cpuset.mems (containerd's runtime spec shows it; a Burstable one's
 * has none), the state file is upstream's and keeps the assignment across a kubelet restart, the
 * pod-resources API and the metrics report the memory, a pod whose memory no NUMA node can hold is
 * refused with upstream's reason, and a deleted pod's memory goes back at the next admission.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CriRuntime } from '../../src/cri/services.js';
import { decodeMemoryCheckpoint } from '../../src/agent/memorymanager/checkpoint.js';
import { readNumaNodeMemory } from '../../src/agent/memorymanager/memory-topology.js';
import { TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import { httpGet, until } from '../e2e/helpers.js';
import { podResourcesClient } from '../e2e/pod-resources-client.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';

const node = 'ctrd-memmgr-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-memmgr-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;
const Mi = 2 ** 20;
const numaNodes = readNumaNodeMemory();

beforeAll(
  async () =>
    ({ ctrd, cri, c } = await startContainerdCluster({
      dir,
      node,
      config: [
        'memoryManagerPolicy: Static',
        // The default hard eviction threshold (memory.available 100Mi) is what Node Allocatable keeps of memory.
        'reservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]',
        'topologyManagerPolicy: single-numa-node',
      ],
    })),
  60_000,
);
afterAll(() => stopContainerdCluster({ ctrd, cri, c, dir }), 90_000);

const main = (resources?: object) => ({
  name: 'main',
  image: TEST_IMAGES.busybox,
  command: ['sleep', '3600'],
  ...(resources ? { resources } : {}),
});
const guaranteed = (memory: string) => ({
  requests: { cpu: '100m', memory },
  limits: { cpu: '100m', memory },
});
const status = (name: string) => c.api.store.get('pods', 'default', name)?.status as any;
const uidOf = (name: string) => c.api.store.get('pods', 'default', name)?.metadata?.uid as string;

/** The cpuset.mems of the runtime spec containerd made for the pod's container ('' without). */
async function specMems(pod: string): Promise<string> {
  const id = String(status(pod)?.containerStatuses?.[0]?.containerID ?? '').replace('containerd://', '');
  const info = (await cri.runtime.containerStatus(id, true)).info?.info;
  return JSON.parse(info ?? '{}').runtimeSpec?.linux?.resources?.cpu?.mems ?? '';
}
const stateFile = () => decodeMemoryCheckpoint(readFileSync(join(dir, 'root', 'memory_manager_state'), 'utf8'));

describe('memory manager (Static) on containerd', () => {
  it("pins a Guaranteed pod's memory to a NUMA node and keeps it across a kubelet restart", async () => {
    const create = (name: string, resources?: object) =>
      c.api.store.create(
        'pods',
        boundPod(name, node, { terminationGracePeriodSeconds: 1, containers: [main(resources)] }),
      );
    create('pinned', guaranteed('64Mi'));
    create('burstable', { requests: { memory: '32Mi' } });
    for (const name of ['pinned', 'burstable'])
      await until(() => status(name)?.phase === 'Running', 60_000, `${name} running`);
    expect(await specMems('pinned')).toBe('0');
    expect(await specMems('burstable')).toBe('');
    const pinned = uidOf('pinned');
    const state = stateFile();
    expect(state.policyName).toBe('Static');
    expect(state.entries.get(pinned)?.get('main')).toEqual([{ numaAffinity: [0], type: 'memory', size: 64 * Mi }]);
    expect(state.machineState.get(0)?.memoryMap.get('memory')).toMatchObject({
      systemReserved: 100 * Mi,
      reserved: 64 * Mi,
    });
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toContain('kubelet_memory_manager_pinning_requests_total 1\n');
    expect(metrics).toContain('kubelet_memory_manager_pinning_errors_total 0\n');
    const { client, call } = await podResourcesClient(join(dir, 'root'));
    try {
      expect(
        (await call<any>('Get', { pod_name: 'pinned', pod_namespace: 'default' })).pod_resources.containers[0].memory,
      ).toEqual([{ memory_type: 'memory', size: 64 * Mi, topology: { nodes: [{ ID: 0 }] } }]);
      const allocatable = (await call<any>('GetAllocatableResources', {})).memory;
      expect(allocatable).toContainEqual(
        expect.objectContaining({ memory_type: 'memory', topology: { nodes: [{ ID: 0 }] } }),
      );
    } finally {
      client.close();
    }
    // After a restart the pod is admitted again on the assignment it has: it keeps running, nothing is pinned twice.
    await c.restartKubelet();
    const later = 'after-restart';
    create(later, guaranteed('32Mi'));
    await until(() => status(later)?.phase === 'Running', 60_000, `${later} running`);
    expect(status('pinned')?.phase).toBe('Running');
    expect(stateFile().machineState.get(0)?.memoryMap.get('memory')?.reserved).toBe(96 * Mi);
    expect(await specMems(later)).toBe('0');
  }, 150_000);

  it("refuses a pod whose memory no NUMA node can hold, with upstream's reason", async () => {
    const tooBig = `${Math.ceil(Math.max(...numaNodes.map((n) => n.memoryBytes)) / Mi) + 1024}Mi`;
    c.api.store.create(
      'pods',
      boundPod('too-big', node, { terminationGracePeriodSeconds: 1, containers: [main(guaranteed(tooBig))] }),
    );
    await until(() => status('too-big')?.phase === 'Failed', 30_000, 'too-big refused');
    expect(status('too-big')).toMatchObject({ reason: 'UnexpectedAdmissionError' });
    expect(status('too-big').message).toContain(
      'Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected',
    );
  }, 60_000);

  it("gives a deleted pod's memory back at the next admission", async () => {
    const pinned = uidOf('pinned');
    c.api.store.remove('pods', 'default', 'pinned', {});
    await until(() => !c.api.store.get('pods', 'default', 'pinned'), 30_000, 'pinned gone');
    c.api.store.create(
      'pods',
      boundPod('next', node, { terminationGracePeriodSeconds: 1, containers: [main(guaranteed('16Mi'))] }),
    );
    await until(() => status('next')?.phase === 'Running', 60_000, 'next running');
    const state = stateFile();
    expect(state.entries.has(pinned)).toBe(false);
    expect(state.machineState.get(0)?.memoryMap.get('memory')?.reserved).toBe(48 * Mi);
  }, 90_000);
});
