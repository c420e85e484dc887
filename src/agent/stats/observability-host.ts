/**
 * The observability half of the routes' host: /stats/summary, the metrics endpoints, /spec/ and
 * request counting, over the stats collector, volume stats, the kubelet metrics registry and the
 * prober's counters. Everything is answered from memory.
 */
import os from 'node:os';
import type { Pod } from '../../api/types.js';
import type { PodManager } from '../pods/pod-manager.js';
import type { StatusManager } from '../status/status-manager.js';
import type { KubeletMetrics } from '../metrics/kubelet-metrics.js';
import type { MachineInfo } from '../nodestatus/machine-info.js';
import type { VolumeStatsCollector } from '../volume/volume-stats.js';
import type { StatsCollector } from './collector.js';
import { buildSummary } from './summary.js';
import { cadvisorMetrics, resourceMetrics, type ContainerInfo } from './resource-metrics.js';
import { renderFamilies, type Family } from '../metrics/prom-text.js';
import type { HealthcheckResult } from '../metrics/healthcheck-slis.js';
import type { CgroupContext } from '../runtime/linux-resources.js';
import { containerCgroupId, podCgroupId, qosCgroupIds } from './cgroup-ids.js';
import type { CgroupDetail } from '../../lib/cgroup-usage.js';
import { readDiskMap } from '../../lib/block-devices.js';
import { bytes } from '../../api/quantity.js';
import { podLimits } from '../cgroups/pod-resource-config.js';

/** The metrics endpoints (the routes' host interface names the same five; main.ts checks they fit). */
export type MetricsKind = 'kubelet' | 'resource' | 'cadvisor' | 'probes' | 'slis';

/** What it reads. */
export interface ObservabilityDeps {
  nodeName: string;
  startTime: string;
  collector: StatsCollector;
  volumeStats: VolumeStatsCollector;
  podManager: PodManager;
  statusManager: StatusManager;
  metrics: KubeletMetrics;
  probeCounts(): Iterable<{ labels: Record<string, string>; count: number }>;
  /** prober_probe_duration_seconds. */
  probeDurations?(): Family;
  machine(): MachineInfo | undefined;
  /** How pod cgroups are named (cAdvisor's `id` labels). */
  cgroups: CgroupContext;
  /**
   * Pods the pod manager let go (deleted) whose workers still terminate them: their containers
   * and cgroups are still there, and keep their `id` labels until they are gone.
   */
  lingeringPods?: () => Pod[];
}

/**
 * A pod's memory limits: its cgroup's (when every container declares one, as upstream sets it) and its containers'.
 * Pure.
 */
export function memoryLimits(pod: Pod): { memoryLimit?: number; containerMemoryLimits: Map<string, number> } {
  const containers = new Map<string, number>();
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
    const limit = bytes(c.resources?.limits?.memory) ?? 0;
    if (limit > 0) containers.set(c.name, limit);
  }
  const pl = podLimits(pod);
  return {
    memoryLimit: pl.memoryDeclared && pl.memoryBytes > 0 ? pl.memoryBytes : undefined,
    containerMemoryLimits: containers,
  };
}

/** The host methods. */
export function createObservabilityHost(d: ObservabilityDeps) {
  /**
   * The pod manager's pods and `lingering` (deleted, still terminating: their sandboxes and cgroups are still there).
   */
  const podsWith = (lingering: Pod[]): Pod[] =>
    lingering.length ? [...d.podManager.getPods(), ...lingering] : d.podManager.getPods();
  const containerInfo = (
    lingering: Pod[] = [],
    details?: ReadonlyMap<string, CgroupDetail>,
  ): ((id: string) => ContainerInfo) => {
    const m = new Map<string, ContainerInfo>();
    for (const p of podsWith(lingering)) {
      const st = d.statusManager.get(p.metadata.uid!);
      const podId = podCgroupId(p, d.cgroups);
      for (const cs of [
        ...(st?.containerStatuses ?? []),
        ...(st?.initContainerStatuses ?? []),
        ...(st?.ephemeralContainerStatuses ?? []),
      ]) {
        const id = cs.containerID?.replace(/^[^:]+:\/\//, '');
        if (!id) continue;
        const startedAtMs = cs.state.running?.startedAt ? Date.parse(cs.state.running.startedAt) : undefined;
        m.set(id, {
          startedAtMs,
          image: cs.image,
          cgroupId: containerCgroupId(podId, id, d.cgroups.cgroupDriver),
          cgroup: details?.get(id),
        });
      }
    }
    return (id) => m.get(id) ?? {};
  };
  return {
    observeHealthchecks(type: string, results: readonly HealthcheckResult[]): void {
      d.metrics.healthcheckSlis.observe(type, results);
    },
    observeWebSocketStreaming(subresource: 'exec' | 'attach' | 'portforward'): void {
      d.metrics.webSocketStreamingRequests.inc({ subresource });
    },
    resetMetrics(kind: 'slis'): void {
      if (kind === 'slis') d.metrics.healthcheckSlis.reset();
    },
    statsSummary(o: { onlyCpuAndMemory: boolean }): Record<string, unknown> | undefined {
      const snap = d.collector.snapshot();
      if (!snap) return undefined;
      // Deleted pods still terminating too: upstream's summary lists every sandbox the runtime has.
      const pods = podsWith(d.lingeringPods?.() ?? []).map((p) => {
        const st = d.statusManager.get(p.metadata.uid!);
        const starts = new Map<string, string>();
        for (const cs of [...(st?.containerStatuses ?? []), ...(st?.initContainerStatuses ?? [])])
          if (cs.state.running?.startedAt) starts.set(cs.name, cs.state.running.startedAt);
        return {
          uid: p.metadata.uid!,
          name: p.metadata.name!,
          namespace: p.metadata.namespace!,
          startTime: st?.startTime,
          containerStartTimes: starts,
          ...memoryLimits(p),
        };
      });
      return buildSummary(snap, {
        nodeName: d.nodeName,
        startTime: d.startTime,
        pods,
        volumes: (uid) => d.volumeStats.get(uid),
        onlyCpuAndMemory: o.onlyCpuAndMemory,
        containerPressure: (id) => d.collector.containerPressure(id),
      });
    },
    async metricsText(kind: MetricsKind): Promise<string> {
      if (kind === 'kubelet') return d.metrics.text();
      if (kind === 'slis') {
        // Nothing observed yet (or just reset): an empty body, as client_golang's for a registry without samples.
        const families = d.metrics.healthcheckSlis.families();
        return families.length ? renderFamilies(families) : '';
      }
      if (kind === 'resource') return resourceMetrics(d.collector.snapshot(), containerInfo());
      if (kind === 'cadvisor') {
        const m = d.machine();
        const lingering = d.lingeringPods?.() ?? [];
        const podIds = (uid: string) => {
          const p = d.podManager.getPodByUid(uid) ?? lingering.find((x) => x.metadata.uid === uid);
          return p && podCgroupId(p, d.cgroups);
        };
        return cadvisorMetrics(
          d.collector.snapshot(),
          containerInfo(lingering, d.collector.containerDetails()),
          { cores: m?.cpuCores ?? os.cpus().length, memoryBytes: m?.memoryBytes ?? os.totalmem() },
          { pod: podIds, qos: qosCgroupIds(d.cgroups), podNetDev: (uid) => d.collector.podNetDev().get(uid) },
        );
      }
      return renderFamilies([
        {
          name: 'prober_probe_total',
          help: '[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.',
          type: 'counter',
          samples: [...d.probeCounts()].map((c) => ({ labels: c.labels, value: c.count })),
        },
        ...(d.probeDurations ? [d.probeDurations()] : []),
      ]);
    },
    machineSpec(): Record<string, unknown> {
      const m = d.machine();
      return {
        num_cores: m?.cpuCores ?? os.cpus().length,
        num_physical_cores: m?.cpuCores ?? os.cpus().length,
        num_sockets: 1,
        cpu_frequency_khz: Math.round((os.cpus()[0]?.speed ?? 0) * 1000),
        memory_capacity: m?.memoryBytes ?? os.totalmem(),
        machine_id: m?.machineID ?? '',
        system_uuid: m?.systemUUID ?? '',
        boot_id: m?.bootID ?? '',
        filesystems: [],
        disk_map: Object.fromEntries(readDiskMap()),
        network_devices: os.networkInterfaces()
          ? Object.keys(os.networkInterfaces())
              .filter((n) => n !== 'lo')
              .map((name) => ({ name }))
          : [],
        topology: [],
        cloud_provider: 'Unknown',
        instance_type: 'Unknown',
        instance_id: 'None',
      };
    },
    recordHttpRequest(r: {
      method: string;
      path: string;
      serverType: 'readonly' | 'readwrite';
      longRunning: boolean;
      seconds: number;
    }): void {
      const labels = { method: r.method, path: r.path, server_type: r.serverType, long_running: String(r.longRunning) };
      d.metrics.httpRequests.inc(labels);
      d.metrics.httpRequestsDuration.observe(labels, r.seconds);
    },
    recordHttpInflight(
      r: { method: string; path: string; serverType: 'readonly' | 'readwrite'; longRunning: boolean },
      delta: 1 | -1,
    ): void {
      d.metrics.httpInflight.add(
        { method: r.method, path: r.path, server_type: r.serverType, long_running: String(r.longRunning) },
        delta,
      );
    },
  };
}
