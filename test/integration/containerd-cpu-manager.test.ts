/**
 * The static CPU manager policy on containerd (cgroup v1 cpuset, real runc): a Guaranteed pod's
 * integer CPU request gets CPUs of its own, the shared pool every other container runs on shrinks
 * to the rest (written into running containers by the reconcile loop) and grows back when the
 * pod goes; its CPUs come without a CFS quota; the state file is upstream's format and keeps the assignment across a
 * kubelet restart; the pod-resources API and the metrics report the CPUs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { CriRuntime } from '../../src/cri/services.js';
import { decodeCheckpoint } from '../../src/agent/cpumanager/checkpoint.js';
import { formatCpuSet } from '../../src/lib/cpuset.js';
import { readCpuTopology } from '../../src/agent/cpumanager/topology.js';
import { TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import { httpGet, until } from '../e2e/helpers.js';
import { podResourcesClient } from '../e2e/pod-resources-client.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';

const node = 'ctrd-cpumgr-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-cpumgr-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;
const all = [...readCpuTopology().keys()].sort((a, b) => a - b);

beforeAll(
  async () =>
    ({ ctrd, cri, c } = await startContainerdCluster({
      dir,
      node,
      config: [
        'cpuManagerPolicy: static',
        'cpuManagerReconcilePeriod: 1s',
        'reservedSystemCPUs: "0"',
        'topologyManagerPolicy: single-numa-node',
      ],
    })),
  60_000,
);
afterAll(() => stopContainerdCluster({ ctrd, cri, c, dir }), 90_000);

/** The cgroup of a pod's container "main" (its id as /metrics/cadvisor names it, cgroupfs driver). */
async function cgroupOf(pod: string): Promise<string | undefined> {
  const body = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics/cadvisor`)).body;
  return new RegExp(`^container_last_seen\\{container="main",id="([^"]+)",[^}]*pod="${pod}"\\}`, 'm').exec(body)?.[1];
}

/** The cpuset.cpus of a pod's container "main". */
async function cpusetOf(pod: string): Promise<string> {
  const id = await cgroupOf(pod);
  if (!id) return '';
  try {
    return readFileSync(join('/sys/fs/cgroup/cpuset', id, 'cpuset.cpus'), 'utf8').trim();
  } catch {
    return '';
  }
}

describe('CPU manager (static) on containerd', () => {
  it("pins a Guaranteed pod's integer CPUs, moves the shared pool off them and back", async () => {
    expect(all.length).toBeGreaterThanOrEqual(2);
    const main = (resources?: object) => ({
      name: 'main',
      image: TEST_IMAGES.busybox,
      command: ['sleep', '3600'],
      ...(resources ? { resources } : {}),
    });
    c.api.store.create('pods', boundPod('shared', node, { terminationGracePeriodSeconds: 1, containers: [main()] }));
    await until(
      async () => (await cpusetOf('shared')) === formatCpuSet(all),
      60_000,
      'the shared container on every CPU',
    );
    // CPU 0 is reserved (reservedSystemCPUs), so the exclusive CPU is the next one.
    const cpu = { cpu: '1', memory: '32Mi' };
    c.api.store.create(
      'pods',
      boundPod('pinned', node, {
        terminationGracePeriodSeconds: 1,
        containers: [main({ requests: cpu, limits: cpu })],
      }),
    );
    await until(async () => (await cpusetOf('pinned')) === '1', 60_000, 'the pinned container on CPU 1');
    // Exclusive CPUs come without a CFS quota, the container's nor the pod's (DisableCPUQuotaWithExclusiveCPUs).
    const pinnedCgroup = (await cgroupOf('pinned'))!;
    const quota = (cgroup: string) =>
      readFileSync(join('/sys/fs/cgroup/cpu', cgroup, 'cpu.cfs_quota_us'), 'utf8').trim();
    expect([quota(pinnedCgroup), quota(dirname(pinnedCgroup))]).toEqual(['-1', '-1']);
    const rest = formatCpuSet(all.filter((x) => x !== 1));
    await until(async () => (await cpusetOf('shared')) === rest, 20_000, 'the shared container off CPU 1');
    // upstream's state file: the Go kubelet could take this node over.
    const uid = c.api.store.get('pods', 'default', 'pinned')?.metadata?.uid as string;
    const state = decodeCheckpoint(readFileSync(join(dir, 'root', 'cpu_manager_state'), 'utf8'), 'static');
    expect([formatCpuSet(state.defaultCpuSet), state.entries.get(uid)?.get('main')]).toEqual([rest, [1]]);
    // upstream's CPU manager metrics.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toContain('kubelet_cpu_manager_pinning_requests_total 1\n');
    expect(metrics).toContain('kubelet_cpu_manager_exclusive_cpu_allocation_count 1\n');
    // The exclusive CPU by NUMA node (one node on this machine).
    expect(metrics).toContain('kubelet_cpu_manager_allocation_per_numa{numa_node="0"} 1\n');
    expect(metrics).toContain(`kubelet_cpu_manager_shared_pool_size_millicores ${(all.length - 2) * 1000}\n`);
    // single-numa-node on a one-node machine admits both; the topology manager counted them.
    expect(metrics).toContain('kubelet_topology_manager_admission_requests_total 2\n');
    expect(metrics).toContain('kubelet_topology_manager_admission_errors_total 0\n');
    // Upstream's alignment counters: under single-numa-node each container's NUMA alignment is guaranteed, so both
    // pods' containers count; whole cores are not asked for (no full-pcpus-only).
    expect(metrics).toContain(
      'kubelet_container_aligned_compute_resources_count{boundary="numa_node",scope="container"} 2\n',
    );
    expect(metrics).toContain(
      'kubelet_container_aligned_compute_resources_count{boundary="numa_node",scope="pod"} 0\n',
    );
    expect(metrics).toContain(
      'kubelet_container_aligned_compute_resources_count{boundary="physical_cpu",scope="container"} 0\n',
    );
    expect(metrics).toContain(
      'kubelet_container_aligned_compute_resources_failure_count{boundary="numa_node",scope="container"} 0\n',
    );
    // Both admissions timed, in whole milliseconds, on upstream's buckets (0.05 ms doubling to 819.2 ms).
    expect(metrics).toContain('kubelet_topology_manager_admission_duration_ms_count 2\n');
    expect(metrics).toMatch(/^kubelet_topology_manager_admission_duration_ms_bucket\{le="819.2"\} 2$/m);
    expect(metrics).toMatch(/^kubelet_topology_manager_admission_duration_ms_bucket\{le="0.05"\} [0-2]$/m);
    // The pod-resources API reports it.
    const { client, call } = await podResourcesClient(join(dir, 'root'));
    try {
      expect(await call<any>('GetAllocatableResources', {})).toMatchObject({ cpu_ids: all.filter((x) => x !== 0) });
      expect(
        (await call<any>('Get', { pod_name: 'pinned', pod_namespace: 'default' })).pod_resources.containers,
      ).toMatchObject([{ name: 'main', cpu_ids: [1] }]);
    } finally {
      client.close();
    }
    // A kubelet restart keeps the assignment (the state file): the pinned container keeps CPU 1, a new shared one stays
    // off it.
    await c.restartKubelet();
    c.api.store.create('pods', boundPod('later', node, { terminationGracePeriodSeconds: 1, containers: [main()] }));
    await until(
      async () => (await cpusetOf('later')) === rest,
      60_000,
      'a new shared container off CPU 1 after the restart',
    );
    expect([await cpusetOf('pinned'), await cpusetOf('shared')]).toEqual(['1', rest]);
    // The pod goes: its CPU returns to the shared pool.
    c.api.store.remove('pods', 'default', 'pinned', {});
    // The reconcile updates the shared containers one after the other: both are awaited (checking the second right
    // after the first raced with its update).
    await until(
      async () => (await cpusetOf('shared')) === formatCpuSet(all) && (await cpusetOf('later')) === formatCpuSet(all),
      40_000,
      'the shared containers back on every CPU',
    );
  }, 150_000);
});
