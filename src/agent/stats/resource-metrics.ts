/**
 * /metrics/resource (the kubelet's resource metrics endpoint that metrics-server scrapes) and
 * /metrics/cadvisor (the container_* / machine_* names dashboards use), rendered from a
 * StatsSnapshot with explicit millisecond timestamps. Pure.
 */
import type { ContainerSample, StatsSnapshot, SystemContainerSample } from './samples.js';
import type { QosCgroupIds } from './cgroup-ids.js';
import { podUsage, sumDefined } from './pod-usage.js';
import { cadvisorDetailFamilies, networkCounterFamilies, pressureFamilies } from './cadvisor-details.js';
import type { NetDevStats } from './node-sources.js';
import type { CgroupDetail } from '../../lib/cgroup-usage.js';
import type { PressureByResource } from '../../lib/pressure.js';
import { renderFamilies, type Family } from '../metrics/prom-text.js';

const family = (name: string, help: string, type: 'counter' | 'gauge'): Family => ({ name, help, type, samples: [] });

/** Per container, what the snapshot does not carry. */
export interface ContainerInfo {
  startedAtMs?: number;
  image?: string;
  /** Its cgroup, cAdvisor's `id` (cgroup-ids.ts). */
  cgroupId?: string;
  /**
   * What its cgroup says beyond usage, when the kubelet can read it (a CRI runtime's containers, below their pod's
   * cgroup).
   */
  cgroup?: CgroupDetail;
}

/** The /metrics/resource text. `scrapeError` when no snapshot could be taken. */
export function resourceMetrics(s: StatsSnapshot | undefined, info: (containerId: string) => ContainerInfo): string {
  const nodeCpu = family(
    'node_cpu_usage_seconds_total',
    '[STABLE] Cumulative cpu time consumed by the node in core-seconds',
    'counter',
  );
  const nodeMem = family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge');
  const nodeSwap = family(
    'node_swap_usage_bytes',
    '[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems',
    'gauge',
  );
  const cCpu = family(
    'container_cpu_usage_seconds_total',
    '[STABLE] Cumulative cpu time consumed by the container in core-seconds',
    'counter',
  );
  const cMem = family(
    'container_memory_working_set_bytes',
    '[STABLE] Current working set of the container in bytes',
    'gauge',
  );
  const cStart = family(
    'container_start_time_seconds',
    '[STABLE] Start time of the container since unix epoch in seconds',
    'gauge',
  );
  const cSwap = family(
    'container_swap_usage_bytes',
    '[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems',
    'gauge',
  );
  const cSwapLimit = family(
    'container_swap_limit_bytes',
    '[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems',
    'gauge',
  );
  const pSwap = family(
    'pod_swap_usage_bytes',
    '[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems',
    'gauge',
  );
  const pCpu = family(
    'pod_cpu_usage_seconds_total',
    '[STABLE] Cumulative cpu time consumed by the pod in core-seconds',
    'counter',
  );
  const pMem = family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge');
  const err = family(
    'resource_scrape_error',
    '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise',
    'gauge',
  );
  err.samples.push({ value: s ? 0 : 1 });
  if (s) {
    const ts = s.atMs;
    nodeCpu.samples.push({ value: s.node.cpuNs / 1e9, timestampMs: ts });
    nodeMem.samples.push({ value: s.node.memory.workingSet, timestampMs: ts });
    nodeSwap.samples.push({ value: s.node.memory.swapUsage, timestampMs: ts });
    const pods = new Map<string, { pod: string; namespace: string; containers: ContainerSample[] }>();
    for (const c of s.containers) {
      const labels = { container: c.name, namespace: c.podNamespace, pod: c.podName };
      if (c.cpuNs !== undefined) cCpu.samples.push({ labels, value: c.cpuNs / 1e9, timestampMs: ts });
      if (c.workingSet !== undefined) cMem.samples.push({ labels, value: c.workingSet, timestampMs: ts });
      if (c.swapUsage !== undefined) cSwap.samples.push({ labels, value: c.swapUsage, timestampMs: ts });
      // Upstream's limit: what the container uses plus what it may still use, when the runtime reports both.
      if (c.swapUsage !== undefined && c.swapAvailable !== undefined)
        cSwapLimit.samples.push({ labels, value: c.swapUsage + c.swapAvailable, timestampMs: ts });
      const started = info(c.id).startedAtMs;
      if (started) cStart.samples.push({ labels, value: started / 1000, timestampMs: ts });
      const p = pods.get(c.podUid) ?? { pod: c.podName, namespace: c.podNamespace, containers: [] };
      p.containers.push(c);
      pods.set(c.podUid, p);
    }
    for (const [uid, p] of pods) {
      const labels = { namespace: p.namespace, pod: p.pod };
      const { cpuNs, workingSet } = podUsage(s.pods.get(uid), p.containers);
      if (cpuNs !== undefined) pCpu.samples.push({ labels, value: cpuNs / 1e9, timestampMs: ts });
      if (workingSet !== undefined) pMem.samples.push({ labels, value: workingSet, timestampMs: ts });
      const swapUsage = sumDefined(p.containers.map((c) => c.swapUsage));
      if (swapUsage !== undefined) pSwap.samples.push({ labels, value: swapUsage, timestampMs: ts });
    }
  }
  // As client_golang gathers a collector: a family without samples (swap no runtime reports, no pods yet) is left out.
  return renderFamilies(
    [cCpu, cMem, cStart, cSwapLimit, cSwap, nodeCpu, nodeMem, nodeSwap, pCpu, pMem, pSwap, err].filter(
      (f) => f.samples.length,
    ),
  );
}

/**
 * The /metrics/cadvisor text (cAdvisor's names and labels). `id` is the cgroup (cgroup-ids.ts) of
 * a container, of a pod (`ids.pod`; `/kubepods/pod<uid>[/<id>]` for one the kubelet no longer
 * has: neither its pod manager nor a pod worker terminating it), or of the QoS tree (`ids.qos`: kubepods and its
 * burstable and besteffort classes, when
 * the collector measured them), besides the machine's `/`.
 */
export function cadvisorMetrics(
  s: StatsSnapshot | undefined,
  info: (containerId: string) => ContainerInfo,
  machine: { cores: number; memoryBytes: number },
  ids: {
    pod?: (uid: string) => string | undefined;
    qos?: QosCgroupIds;
    podNetDev?: (uid: string) => readonly NetDevStats[] | undefined;
  } = {},
): string {
  const podCgroupId = ids.pod ?? (() => undefined);
  const cpuF = family('container_cpu_usage_seconds_total', 'Cumulative cpu time consumed in seconds.', 'counter');
  const wsF = family('container_memory_working_set_bytes', 'Current working set in bytes.', 'gauge');
  const rssF = family('container_memory_rss', 'Size of RSS in bytes.', 'gauge');
  const usageF = family(
    'container_memory_usage_bytes',
    'Current memory usage in bytes, including all memory regardless of when it was accessed',
    'gauge',
  );
  const rxF = family('container_network_receive_bytes_total', 'Cumulative count of bytes received', 'counter');
  const txF = family('container_network_transmit_bytes_total', 'Cumulative count of bytes transmitted', 'counter');
  const fsF = family(
    'container_fs_usage_bytes',
    'Number of bytes that are consumed by the container on this filesystem.',
    'gauge',
  );
  const seenF = family('container_last_seen', 'Last time a container was seen by the exporter', 'gauge');
  const coresF = family('machine_cpu_cores', 'Number of logical CPU cores.', 'gauge');
  const memF = family('machine_memory_bytes', 'Amount of memory installed on the machine.', 'gauge');
  const details: { labels: Record<string, string>; detail: CgroupDetail }[] = [];
  const pressure: { labels: Record<string, string>; pressure: PressureByResource }[] = [];
  const netDev: { labels: Record<string, string>; stats: NetDevStats }[] = [];
  coresF.samples.push({ value: machine.cores });
  memF.samples.push({ value: machine.memoryBytes });
  if (s) {
    const ts = s.atMs;
    const root = { container: '', id: '/', image: '', name: '', namespace: '', pod: '' };
    cpuF.samples.push({ labels: { ...root, cpu: 'total' }, value: s.node.cpuNs / 1e9, timestampMs: ts });
    wsF.samples.push({ labels: root, value: s.node.memory.workingSet, timestampMs: ts });
    usageF.samples.push({ labels: root, value: s.node.memory.usage, timestampMs: ts });
    if (s.node.pressure) pressure.push({ labels: root, pressure: s.node.pressure });
    for (const i of s.node.network.interfaces) {
      rxF.samples.push({ labels: { ...root, interface: i.name }, value: i.rxBytes, timestampMs: ts });
      txF.samples.push({ labels: { ...root, interface: i.name }, value: i.txBytes, timestampMs: ts });
      netDev.push({ labels: { ...root, interface: i.name }, stats: i });
    }
    const qos: [string | undefined, SystemContainerSample | undefined][] = [
      [ids.qos?.pods, s.podsCgroup],
      [ids.qos?.burstable, s.burstableCgroup],
      [ids.qos?.besteffort, s.besteffortCgroup],
    ];
    for (const [id, c] of qos) {
      if (!id || !c) continue;
      const labels = { ...root, id };
      cpuF.samples.push({ labels: { ...labels, cpu: 'total' }, value: c.cpuNs / 1e9, timestampMs: ts });
      wsF.samples.push({ labels, value: c.workingSet, timestampMs: ts });
      rssF.samples.push({ labels, value: c.rss, timestampMs: ts });
      usageF.samples.push({ labels, value: c.usage, timestampMs: ts });
    }
    for (const c of s.containers) {
      const labels: Record<string, string> = {
        container: c.name,
        id: info(c.id).cgroupId ?? `/kubepods/pod${c.podUid}/${c.id}`,
        image: info(c.id).image ?? '',
        name: c.id,
        namespace: c.podNamespace,
        pod: c.podName,
      };
      if (c.cpuNs !== undefined)
        cpuF.samples.push({ labels: { ...labels, cpu: 'total' }, value: c.cpuNs / 1e9, timestampMs: ts });
      if (c.workingSet !== undefined) wsF.samples.push({ labels, value: c.workingSet, timestampMs: ts });
      if (c.rss !== undefined) rssF.samples.push({ labels, value: c.rss, timestampMs: ts });
      if (c.usage !== undefined) usageF.samples.push({ labels, value: c.usage, timestampMs: ts });
      if (c.rootfsUsed !== undefined)
        fsF.samples.push({ labels: { ...labels, device: 'rootfs' }, value: c.rootfsUsed, timestampMs: ts });
      seenF.samples.push({ labels, value: Math.floor(ts / 1000), timestampMs: ts });
      const detail = info(c.id).cgroup;
      if (detail) details.push({ labels, detail });
      if (detail?.pressure) pressure.push({ labels, pressure: detail.pressure });
    }
    // The pod's cgroup-level series as cAdvisor has them (container and name empty): CPU and memory when the runtime
    // measures them, network.
    const podRefs = new Map(s.containers.map((c) => [c.podUid, { namespace: c.podNamespace, pod: c.podName }]));
    for (const [uid, p] of s.pods) {
      const ref = podRefs.get(uid);
      if (!ref) continue;
      const labels = { container: '', id: podCgroupId(uid) ?? `/kubepods/pod${uid}`, image: '', name: '', ...ref };
      if (p.cpuNs !== undefined)
        cpuF.samples.push({ labels: { ...labels, cpu: 'total' }, value: p.cpuNs / 1e9, timestampMs: ts });
      if (p.workingSet !== undefined) wsF.samples.push({ labels, value: p.workingSet, timestampMs: ts });
      if (p.rss !== undefined) rssF.samples.push({ labels, value: p.rss, timestampMs: ts });
      if (p.usage !== undefined) usageF.samples.push({ labels, value: p.usage, timestampMs: ts });
      for (const i of p.network?.interfaces ?? []) {
        rxF.samples.push({ labels: { ...labels, interface: i.name }, value: i.rxBytes, timestampMs: ts });
        txF.samples.push({ labels: { ...labels, interface: i.name }, value: i.txBytes, timestampMs: ts });
      }
      for (const i of ids.podNetDev?.(uid) ?? []) netDev.push({ labels: { ...labels, interface: i.name }, stats: i });
    }
  }
  return renderFamilies([
    cpuF,
    wsF,
    rssF,
    usageF,
    rxF,
    txF,
    ...networkCounterFamilies(netDev, s?.atMs ?? 0),
    fsF,
    seenF,
    ...cadvisorDetailFamilies(details, s?.atMs ?? 0),
    ...pressureFamilies(pressure, s?.atMs ?? 0),
    coresF,
    memF,
  ]);
}
