/** cAdvisor's `id` labels: the cgroups a runtime makes from the parents the kubelet gives it. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { containerCgroupId, podCgroupId, qosCgroupIds } from '../../../src/agent/stats/cgroup-ids.js';
import { cadvisorMetrics } from '../../../src/agent/stats/resource-metrics.js';
import type { StatsCollector } from '../../../src/agent/stats/collector.js';
import type { StatsSnapshot } from '../../../src/agent/stats/samples.js';
import { createObservabilityHost } from '../../../src/agent/stats/observability-host.js';
import type { PodManager } from '../../../src/agent/pods/pod-manager.js';
import type { StatusManager } from '../../../src/agent/status/status-manager.js';
import type { VolumeStatsCollector } from '../../../src/agent/volume/volume-stats.js';

const pod = (resources: Record<string, Record<string, string>> = {}): Pod =>
  ({
    metadata: { name: 'p', namespace: 'default', uid: 'a-b' },
    spec: { containers: [{ name: 'main', image: 'busybox', resources }] },
  }) as Pod;
const guaranteed = pod({ limits: { cpu: '1', memory: '1Gi' } });
const burstable = pod({ requests: { cpu: '100m' } });

describe('podCgroupId / containerCgroupId', () => {
  it('cgroupfs: the parent itself, below the cgroup root, per QoS class; the container by its id', () => {
    const c = { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' as const };
    expect(podCgroupId(guaranteed, c)).toBe('/kubepods/poda-b');
    expect(podCgroupId(burstable, c)).toBe('/kubepods/burstable/poda-b');
    expect(podCgroupId(pod(), { ...c, cgroupRoot: '/tsk' })).toBe('/tsk/kubepods/besteffort/poda-b');
    expect(containerCgroupId('/kubepods/burstable/poda-b', 'c0ffee', 'cgroupfs')).toBe(
      '/kubepods/burstable/poda-b/c0ffee',
    );
    expect(podCgroupId(pod(), { ...c, cgroupsPerQOS: false })).toBe('/');
    expect(containerCgroupId('/', 'c0ffee', 'cgroupfs')).toBe('/c0ffee');
  });

  it('systemd: the slice inside the slices its name nests it in; the container as containerd’s scope', () => {
    const c = { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'systemd' as const };
    expect(podCgroupId(burstable, c)).toBe('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda_b.slice');
    expect(podCgroupId(guaranteed, c)).toBe('/kubepods.slice/kubepods-poda_b.slice');
    expect(containerCgroupId(podCgroupId(guaranteed, c), 'c0ffee', 'systemd')).toBe(
      '/kubepods.slice/kubepods-poda_b.slice/cri-containerd-c0ffee.scope',
    );
  });
});

describe('cadvisorMetrics ids', () => {
  const snap = {
    atMs: 1000,
    node: {
      cpuNs: 1,
      memory: { workingSet: 1, usage: 1 },
      network: { interfaces: [] },
      rlimit: { maxpid: 1, curproc: 1 },
    },
    kubelet: { cpuNs: 0, rss: 0, usage: 0, workingSet: 0 },
    containers: [
      { id: 'c0ffee', name: 'main', podUid: 'a-b', podName: 'p', podNamespace: 'default', atMs: 1000, cpuNs: 2e9 },
    ],
    podFiles: new Map(),
    pods: new Map([
      [
        'a-b',
        {
          podUid: 'a-b',
          network: { interfaces: [{ name: 'eth0', rxBytes: 5, rxErrors: 0, txBytes: 6, txErrors: 0 }] },
        },
      ],
    ]),
  } as unknown as StatsSnapshot;
  const machine = { cores: 2, memoryBytes: 1 };

  it('names a container and its pod’s network by their cgroups when the pod is known', () => {
    const text = cadvisorMetrics(snap, () => ({ cgroupId: '/kubepods/burstable/poda-b/c0ffee' }), machine, {
      pod: () => '/kubepods/burstable/poda-b',
    });
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="main",cpu="total",id="/kubepods/burstable/poda-b/c0ffee",',
    );
    expect(text).toContain(
      'container_network_receive_bytes_total{container="",id="/kubepods/burstable/poda-b",image="",interface="eth0"',
    );
  });

  it('keeps the ids and the summary entry of a deleted pod that is still terminating (its worker holds it), through the observability host', async () => {
    const host = (lingering: Pod[]) =>
      createObservabilityHost({
        nodeName: 'n',
        startTime: '',
        collector: {
          snapshot: () => snap,
          containerDetails: () => new Map(),
          containerPressure: () => undefined,
          podNetDev: () => new Map(),
        } as unknown as StatsCollector,
        volumeStats: { get: () => [] } as unknown as VolumeStatsCollector,
        podManager: { getPods: () => [], getPodByUid: () => undefined } as unknown as PodManager,
        statusManager: {
          get: () => ({
            containerStatuses: [
              { name: 'main', containerID: 'containerd://c0ffee', image: 'busybox', state: { running: {} } },
            ],
          }),
        } as unknown as StatusManager,
        metrics: {} as never,
        probeCounts: () => [],
        machine: () => undefined,
        cgroups: { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' },
        lingeringPods: () => lingering,
      });
    const text = await host([burstable]).metricsText('cadvisor');
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="main",cpu="total",id="/kubepods/burstable/poda-b/c0ffee",',
    );
    expect(text).toContain(
      'container_network_receive_bytes_total{container="",id="/kubepods/burstable/poda-b",image="",interface="eth0"',
    );
    // Once its worker is gone too, nothing names its cgroups any more: the fallback below.
    expect(await host([]).metricsText('cadvisor')).toContain('id="/kubepods/poda-b/c0ffee"');
    // The summary lists it while it terminates, as upstream's lists every sandbox the runtime has.
    const refs = (h: ReturnType<typeof host>) =>
      (h.statsSummary({ onlyCpuAndMemory: false }) as { pods: { podRef: unknown }[] }).pods.map((p) => p.podRef);
    expect(refs(host([burstable]))).toEqual([{ name: 'p', namespace: 'default', uid: 'a-b' }]);
    expect(refs(host([]))).toEqual([]);
  });

  it('falls back to /kubepods/pod<uid> for a pod the kubelet no longer has', () => {
    const text = cadvisorMetrics(snap, () => ({}), machine);
    expect(text).toContain('id="/kubepods/poda-b/c0ffee"');
    expect(text).toContain('id="/kubepods/poda-b",image="",interface="eth0"');
  });

  it("names the QoS tree's cgroups as cAdvisor does, and exports the ones the collector measured", () => {
    expect(qosCgroupIds({ cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' })).toEqual({
      pods: '/kubepods',
      burstable: '/kubepods/burstable',
      besteffort: '/kubepods/besteffort',
    });
    expect(qosCgroupIds({ cgroupsPerQOS: true, cgroupRoot: '/r/', cgroupDriver: 'cgroupfs' })?.burstable).toBe(
      '/r/kubepods/burstable',
    );
    expect(qosCgroupIds({ cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'systemd' })).toEqual({
      pods: '/kubepods.slice',
      burstable: '/kubepods.slice/kubepods-burstable.slice',
      besteffort: '/kubepods.slice/kubepods-besteffort.slice',
    });
    expect(qosCgroupIds({ cgroupsPerQOS: false, cgroupRoot: '/', cgroupDriver: 'cgroupfs' })).toBeUndefined();
    const qos = qosCgroupIds({ cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' });
    const measured = {
      ...snap,
      podsCgroup: { cpuNs: 9e9, rss: 90, usage: 99, workingSet: 95 },
      besteffortCgroup: { cpuNs: 1e9, rss: 10, usage: 11, workingSet: 12 },
    } as StatsSnapshot;
    const text = cadvisorMetrics(measured, () => ({}), machine, { qos });
    expect(text).toContain(
      'container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods",image="",name="",namespace="",pod=""} 9 ',
    );
    expect(text).toContain(
      'container_memory_working_set_bytes{container="",id="/kubepods/besteffort",image="",name="",namespace="",pod=""} 12 ',
    );
    expect(text).toContain(
      'container_memory_rss{container="",id="/kubepods/besteffort",image="",name="",namespace="",pod=""} 10 ',
    );
    // Burstable was not measured (no such cgroup): no series, never a zero.
    expect(text).not.toContain('id="/kubepods/burstable"');
    // Without the ids (the embedded runtime, no cgroupsPerQOS) nothing of the tree is exported.
    expect(cadvisorMetrics(measured, () => ({}), machine)).not.toContain('id="/kubepods"');
  });
});
