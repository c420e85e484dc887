/**
 * A pod's CPU and memory: its cgroup's, when the runtime measures it (ListPodSandboxStats, as
 * upstream reads the pod cgroup through cAdvisor), else the sum of its containers — in
 * /stats/summary, /metrics/resource and /metrics/cadvisor alike.
 */
import { describe, expect, it } from 'vitest';
import type * as cri from '../../../src/cri/types.js';
import { podSamples, type PodSample, type StatsSnapshot } from '../../../src/agent/stats/samples.js';
import { availableUnder, buildSummary } from '../../../src/agent/stats/summary.js';
import { memoryLimits } from '../../../src/agent/stats/observability-host.js';
import type { CgroupDetail } from '../../../src/lib/cgroup-usage.js';
import { cadvisorMetrics, resourceMetrics } from '../../../src/agent/stats/resource-metrics.js';

const u = (value: number) => ({ value });

function snapshot(pod: Partial<PodSample>): StatsSnapshot {
  const container = (id: string, name: string, cpuNs: number, workingSet: number) => ({
    id,
    name,
    podUid: 'u1',
    podName: 'p',
    podNamespace: 'default',
    atMs: 10_000,
    cpuNs,
    nanoCores: 1000,
    workingSet,
    usage: workingSet,
    rss: workingSet,
  });
  return {
    atMs: 10_000,
    node: {
      cpuNs: 1,
      memory: { workingSet: 1, usage: 1, available: 1 },
      network: { interfaces: [] },
      rlimit: { maxpid: 1, curproc: 1 },
    },
    kubelet: { cpuNs: 0, rss: 0, usage: 0, workingSet: 0 },
    containers: [container('c1', 'a', 1e9, 100), container('c2', 'b', 2e9, 200)],
    podFiles: new Map([['u1', { bytes: 8192, inodes: 2 }]]),
    pods: new Map([['u1', { podUid: 'u1', ...pod }]]),
  } as unknown as StatsSnapshot;
}
const ctx = {
  nodeName: 'n',
  startTime: '2026-01-01T00:00:00Z',
  pods: [{ uid: 'u1', name: 'p', namespace: 'default', containerStartTimes: new Map<string, string>() }],
  volumes: () => [],
  onlyCpuAndMemory: false,
};
type Obj = Record<string, any>;

describe('pod CPU and memory', () => {
  it('are read from a sandbox’s stats', () => {
    const stats: cri.PodSandboxStats[] = [
      {
        attributes: {
          id: 's1',
          metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 },
          labels: {},
          annotations: {},
        },
        linux: {
          cpu: { timestamp: 1, usage_core_nano_seconds: u(5e9) },
          memory: { timestamp: 1, working_set_bytes: u(700), usage_bytes: u(900), rss_bytes: u(600) },
        },
      },
    ];
    expect(podSamples(stats).get('u1')).toMatchObject({ cpuNs: 5e9, workingSet: 700, usage: 900, rss: 600 });
  });

  it('are the pod cgroup’s when the runtime measures it', () => {
    const s = snapshot({ cpuNs: 5e9, nanoCores: 7000, workingSet: 700, usage: 900, rss: 600 });
    const pod = (buildSummary(s, ctx) as Obj).pods[0];
    expect(pod.cpu).toMatchObject({ usageCoreNanoSeconds: 5e9, usageNanoCores: 7000 });
    expect(pod.memory).toMatchObject({ workingSetBytes: 700, usageBytes: 900, rssBytes: 600 });
    expect(resourceMetrics(s, () => ({}))).toMatch(/pod_cpu_usage_seconds_total\{namespace="default",pod="p"\} 5 /);
    expect(resourceMetrics(s, () => ({}))).toMatch(/pod_memory_working_set_bytes\{namespace="default",pod="p"\} 700 /);
    const text = cadvisorMetrics(
      s,
      () => ({}),
      { cores: 1, memoryBytes: 1 },
      { pod: () => '/kubepods/burstable/podu1' },
    );
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/burstable/podu1",image="",name="",namespace="default",pod="p"} 5 ',
    );
    expect(text).toContain(
      'container_memory_working_set_bytes{container="",id="/kubepods/burstable/podu1",image="",name="",namespace="default",pod="p"} 700 ',
    );
  });

  it('are the sum of its containers otherwise, with no pod-level cAdvisor series', () => {
    const s = snapshot({});
    const pod = (buildSummary(s, ctx) as Obj).pods[0];
    expect(pod.cpu).toMatchObject({ usageCoreNanoSeconds: 3e9, usageNanoCores: 2000 });
    expect(pod.memory).toMatchObject({ workingSetBytes: 300 });
    expect(resourceMetrics(s, () => ({}))).toMatch(/pod_cpu_usage_seconds_total\{namespace="default",pod="p"\} 3 /);
    expect(cadvisorMetrics(s, () => ({}), { cores: 1, memoryBytes: 1 })).not.toContain(
      'container="",cpu="total",id="/kubepods',
    );
  });

  it('has what is left under a limit only when there is one, as cAdvisor; page faults at every level', () => {
    const s = snapshot({
      cpuNs: 5e9,
      workingSet: 700,
      usage: 900,
      rss: 600,
      pageFaults: 50,
      majorPageFaults: 2,
      available: 0,
    });
    (s.containers[0] as { available?: number; pageFaults?: number }).available = 0; // containerd: 0 without a limit
    (s.containers[1] as { available?: number; pageFaults?: number }).pageFaults = 30;
    s.kubelet = { cpuNs: 1, rss: 1, usage: 1, workingSet: 1, pageFaults: 5000, majorPageFaults: 3 };
    s.podsCgroup = { cpuNs: 1, rss: 1, usage: 1, workingSet: 400, pageFaults: 6000, majorPageFaults: 4, limit: 1000 };
    const unlimited = (buildSummary(s, ctx) as Obj).pods[0];
    expect(unlimited.memory.availableBytes).toBeUndefined();
    expect(unlimited.containers.map((c: Obj) => c.memory.availableBytes)).toEqual([undefined, undefined]);
    expect(unlimited.memory).toMatchObject({ pageFaults: 50, majorPageFaults: 2 });
    // Limited: the runtime's figure for the pod's cgroup (even 0: nothing left) and for a container; else limit −
    // working set.
    const limited = {
      ...ctx.pods[0],
      memoryLimit: 2000,
      containerMemoryLimits: new Map([
        ['a', 150],
        ['b', 1000],
      ]),
    };
    const pod = (buildSummary(s, { ...ctx, pods: [limited] }) as Obj).pods[0];
    expect(pod.memory.availableBytes).toBe(0);
    expect(pod.containers.map((c: Obj) => c.memory.availableBytes)).toEqual([0, 800]);
    expect(pod.containers[1].memory.pageFaults).toBe(30);
    const sys = (buildSummary(s, ctx) as Obj).node.systemContainers as Obj[];
    expect(sys.find((c) => c.name === 'kubelet')!.memory).toMatchObject({ pageFaults: 5000, majorPageFaults: 3 });
    expect(sys.find((c) => c.name === 'kubelet')!.memory.availableBytes).toBeUndefined();
    expect(sys.find((c) => c.name === 'pods')!.memory).toMatchObject({ availableBytes: 600, pageFaults: 6000 });
    expect(availableUnder(100, undefined, 300)).toBe(0);
    expect(availableUnder(undefined, 5, 3)).toBeUndefined();
  });

  it("take a pod's memory limit as its cgroup has it: every container limited, overhead included", () => {
    const pod = (limits: (string | undefined)[], overhead?: string) =>
      memoryLimits({
        metadata: {},
        spec: {
          containers: limits.map((m, i) => ({
            name: `c${i}`,
            image: 'i',
            resources: m ? { limits: { memory: m } } : {},
          })),
          ...(overhead ? { overhead: { memory: overhead } } : {}),
        },
      } as never);
    expect(pod(['80M', '20M'])).toEqual({
      memoryLimit: 100e6,
      containerMemoryLimits: new Map([
        ['c0', 80e6],
        ['c1', 20e6],
      ]),
    });
    expect(pod(['80M', undefined])).toEqual({ memoryLimit: undefined, containerMemoryLimits: new Map([['c0', 80e6]]) });
    expect(pod(['1Mi'], '1Mi').memoryLimit).toBe(2 * 2 ** 20);
  });

  it('swap, where the runtime reports it: the containers’ in the summary and /metrics/resource, the pod’s their sum; none otherwise', () => {
    const s = snapshot({ cpuNs: 5e9, workingSet: 700 });
    const none = buildSummary(s, ctx) as Obj;
    expect(none.pods[0].swap).toBeUndefined();
    expect(none.pods[0].containers[0].swap).toBeUndefined();
    expect(resourceMetrics(s, () => ({}))).not.toContain('swap_usage_bytes{');
    expect(resourceMetrics(s, () => ({}))).not.toContain('# TYPE container_swap_usage_bytes');
    Object.assign(s.containers[0], { swapUsage: 4096, swapAvailable: 1000 });
    Object.assign(s.containers[1], { swapUsage: 0 });
    const pod = (buildSummary(s, ctx) as Obj).pods[0];
    expect(pod.containers[0].swap).toEqual({
      time: expect.any(String),
      swapAvailableBytes: 1000,
      swapUsageBytes: 4096,
    });
    expect(pod.containers[1].swap).toEqual({ time: expect.any(String), swapUsageBytes: 0 });
    expect(pod.swap).toEqual({ time: expect.any(String), swapUsageBytes: 4096 });
    const text = resourceMetrics(s, () => ({}));
    expect(text).toContain(
      '# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems',
    );
    expect(text).toMatch(/^container_swap_usage_bytes\{container="a",namespace="default",pod="p"\} 4096 10000$/m);
    expect(text).toMatch(/^pod_swap_usage_bytes\{namespace="default",pod="p"\} 4096 10000$/m);
    // The limit (v1.36): usage plus what is still available, only where the runtime reports both.
    expect(text).toContain(
      '# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems',
    );
    expect(text).toMatch(/^container_swap_limit_bytes\{container="a",namespace="default",pod="p"\} 5096 10000$/m);
    expect(text).not.toMatch(/^container_swap_limit_bytes\{container="b"/m);
  });

  it("exports a container's cgroup details on /metrics/cadvisor as cAdvisor: CFS series only with a quota, spec series without a timestamp", () => {
    const s = snapshot({});
    const detail = {
      cacheBytes: 4096,
      mappedFileBytes: 0,
      swapBytes: 0,
      userNs: 2e9,
      systemNs: 1e9,
      cfsPeriods: 10,
      cfsThrottledPeriods: 2,
      cfsThrottledNs: 5e8,
      cpuShares: 512,
      cpuPeriodUs: 100000,
      processes: 3,
    };
    const details = new Map<string, CgroupDetail>([
      ['c1', { ...detail, cpuQuotaUs: 50000, limitBytes: 80e6 }],
      ['c2', detail],
    ]);
    const text = cadvisorMetrics(s, (id) => ({ cgroupId: `/kubepods/podu1/${id}`, cgroup: details.get(id) }), {
      cores: 1,
      memoryBytes: 1,
    });
    const labels = (id: string, name: string) =>
      `container="${name}",id="/kubepods/podu1/${id}",image="",name="${id}",namespace="default",pod="p"`;
    expect(text).toContain('# HELP container_memory_cache Number of bytes of page cache memory.');
    expect(text).toContain(`container_memory_cache{${labels('c1', 'a')}} 4096 10000`);
    expect(text).toContain(`container_cpu_cfs_throttled_periods_total{${labels('c1', 'a')}} 2 10000`);
    expect(text).toContain(`container_cpu_cfs_throttled_seconds_total{${labels('c1', 'a')}} 0.5 10000`);
    expect(text).not.toContain(`container_cpu_cfs_periods_total{${labels('c2', 'b')}}`);
    expect(text).toContain(`container_spec_cpu_quota{${labels('c1', 'a')}} 50000\n`);
    expect(text).toContain(`container_spec_memory_limit_bytes{${labels('c1', 'a')}} 80000000\n`);
    expect(text).toContain(`container_spec_memory_limit_bytes{${labels('c2', 'b')}} 0\n`);
    expect(text).toContain(`container_cpu_user_seconds_total{${labels('c2', 'b')}} 2 10000`);
    expect(text).toContain(`container_processes{${labels('c2', 'b')}} 3 10000`);
    // A pod's interfaces with cAdvisor's packet counters, on the pod's row.
    const withNet = cadvisorMetrics(
      snapshot({ cpuNs: 1 }),
      () => ({}),
      { cores: 1, memoryBytes: 1 },
      {
        pod: () => '/kubepods/podu1',
        podNetDev: () => [
          {
            name: 'eth0',
            rxBytes: 1,
            rxPackets: 40,
            rxErrors: 0,
            rxDropped: 3,
            txBytes: 2,
            txPackets: 50,
            txErrors: 0,
            txDropped: 0,
          },
        ],
      },
    );
    expect(withNet).toContain(
      'container_network_receive_packets_total{container="",id="/kubepods/podu1",image="",interface="eth0",name="",namespace="default",pod="p"} 40 10000',
    );
    expect(withNet).toContain(
      '# HELP container_network_receive_packets_dropped_total Cumulative count of packets dropped while receiving',
    );
    // And the node's, on the root row.
    const node = snapshot({});
    node.node.network = {
      interfaces: [
        {
          name: 'ens3',
          rxBytes: 9,
          rxPackets: 7,
          rxErrors: 0,
          rxDropped: 1,
          txBytes: 9,
          txPackets: 8,
          txErrors: 0,
          txDropped: 0,
        },
      ],
    };
    expect(cadvisorMetrics(node, () => ({}), { cores: 1, memoryBytes: 1 })).toContain(
      'container_network_transmit_packets_total{container="",id="/",image="",interface="ens3",name="",namespace="",pod=""} 8 10000',
    );
    // Without details (the embedded runtime's containers), none of these families.
    expect(cadvisorMetrics(snapshot({}), () => ({}), { cores: 1, memoryBytes: 1 })).not.toContain(
      'container_memory_cache',
    );
  });

  it("exports a container's block I/O by device as cAdvisor: fs reads/writes, bytes and operations, blkio device usage by operation", () => {
    const dev = (ops: Record<string, number>) => [{ major: 254, minor: 0, device: '/dev/vda', ops }];
    const details = new Map<string, CgroupDetail>([
      [
        'c1',
        {
          cacheBytes: 0,
          mappedFileBytes: 0,
          io: {
            serviceBytes: dev({ Read: 8192, Write: 4096, Total: 12288 }),
            serviced: dev({ Read: 2, Write: 1 }),
            costUsage: dev({ Count: 1_500_000 }),
            costWait: [],
            costIndebt: [],
            costIndelay: [],
          },
        },
      ],
      ['c2', { cacheBytes: 0, mappedFileBytes: 0 }],
    ]);
    const text = cadvisorMetrics(
      snapshot({}),
      (id) => ({ cgroupId: `/kubepods/podu1/${id}`, cgroup: details.get(id) }),
      { cores: 1, memoryBytes: 1 },
    );
    const labels =
      'container="a",device="/dev/vda",id="/kubepods/podu1/c1",image="",name="c1",namespace="default",pod="p"';
    expect(text).toContain(
      '# HELP container_fs_reads_bytes_total Cumulative count of bytes read\n# TYPE container_fs_reads_bytes_total counter',
    );
    expect(text).toContain(`container_fs_reads_bytes_total{${labels}} 8192 10000`);
    expect(text).toContain(`container_fs_writes_bytes_total{${labels}} 4096 10000`);
    expect(text).toContain(`container_fs_reads_total{${labels}} 2 10000`);
    expect(text).toContain(`container_fs_writes_total{${labels}} 1 10000`);
    expect(text).toContain(`container_fs_io_cost_usage_seconds_total{${labels}} 1.5 10000`);
    expect(text).not.toContain('container_fs_io_cost_wait_seconds_total');
    for (const [op, v] of [
      ['Read', 8192],
      ['Write', 4096],
      ['Total', 12288],
    ])
      expect(text).toContain(
        `container_blkio_device_usage_total{container="a",device="/dev/vda",id="/kubepods/podu1/c1",image="",major="254",minor="0",name="c1",namespace="default",operation="${op}",pod="p"} ${v} 10000`,
      );
    // A container without I/O accounting has none of these rows.
    expect(text).not.toMatch(/^container_fs_reads_total\{container="b"/m);
  });
});
