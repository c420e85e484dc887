/**
 * A pod's CPU and memory: its cgroup's, when the runtime measures it (ListPodSandboxStats, as
 * upstream reads the pod cgroup through cAdvisor), else the sum of its containers — in
 * /stats/summary, /metrics/resource and /metrics/cadvisor alike.
 */
import { describe, expect, it } from 'vitest';
import type * as cri from '../../../src/cri/types.js';
import { podSamples, type PodSample, type StatsSnapshot } from '../../../src/agent/stats/collector.js';
import { buildSummary } from '../../../src/agent/stats/summary.js';
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
    node: { cpuNs: 1, memory: { workingSet: 1, usage: 1, available: 1 }, network: { interfaces: [] }, rlimit: { maxpid: 1, curproc: 1 } },
    kubelet: { cpuNs: 0, rss: 0, usage: 0, workingSet: 0 },
    containers: [container('c1', 'a', 1e9, 100), container('c2', 'b', 2e9, 200)],
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
        attributes: { id: 's1', metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 }, labels: {}, annotations: {} },
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
    const text = cadvisorMetrics(s, () => ({}), { cores: 1, memoryBytes: 1 }, { pod: () => '/kubepods/burstable/podu1' });
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/burstable/podu1",image="",name="",namespace="default",pod="p"} 5 ',
    );
    expect(text).toContain('container_memory_working_set_bytes{container="",id="/kubepods/burstable/podu1",image="",name="",namespace="default",pod="p"} 700 ');
  });

  it('are the sum of its containers otherwise, with no pod-level cAdvisor series', () => {
    const s = snapshot({});
    const pod = (buildSummary(s, ctx) as Obj).pods[0];
    expect(pod.cpu).toMatchObject({ usageCoreNanoSeconds: 3e9, usageNanoCores: 2000 });
    expect(pod.memory).toMatchObject({ workingSetBytes: 300 });
    expect(resourceMetrics(s, () => ({}))).toMatch(/pod_cpu_usage_seconds_total\{namespace="default",pod="p"\} 3 /);
    expect(cadvisorMetrics(s, () => ({}), { cores: 1, memoryBytes: 1 })).not.toContain('container="",cpu="total",id="/kubepods');
  });
});
