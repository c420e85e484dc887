/**
 * The stats collector (the kubelet's stats provider, CRI flavour): every 10 s (and 1 s after
 * start, so rates exist early) it samples the node (node-sources.ts), the kubelet process, the
 * runtime's ListContainerStats and ImageFsInfo, the pods (their cgroups when the kubelet makes
 * them, else ListPodSandboxStats: CPU, memory, network, process count) and the pods' log
 * directories, turns cumulative CPU into usageNanoCores against the previous sample (rates.ts)
 * and keeps the result in memory. Requests read `snapshot()`; a request never waits for
 * sampling and costs the same however many come. Figures the runtime does not give are left out,
 * never reported as zero.
 */
import { join } from 'node:path';
import type { CriRuntime } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import { machineDeviceNamer } from '../../lib/block-devices.js';
import { readCgroupDetail, readCgroupUsage, type CgroupDetail, type CgroupDirs } from '../../lib/cgroup-usage.js';
import { listDirSync, statSyncOrUndefined } from '../../lib/fs-util.js';
import type { Clock } from '../../lib/clock.js';
import { periodically } from '../../lib/periodically.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { systemPressure, type PressureByResource } from '../../lib/pressure.js';
import { ContainerNameLabel, PodNameLabel, PodNamespaceLabel, PodUidLabel } from '../runtime/labels.js';
import { podDir } from '../runtime/pod-files.js';
import {
  fsUsage,
  nodeCpuNs,
  nodeMemory,
  nodeNetwork,
  nodeRlimit,
  processNetDev,
  type NetDevStats,
} from './node-sources.js';
import {
  podSamples,
  withPodRates,
  type ContainerSample,
  type StatsSnapshot,
  type SystemContainerSample,
} from './samples.js';
import { nanoCores } from './rates.js';
import { podSamplesFromCgroups } from './pod-cgroup-samples.js';
import { runtimeFilesystems } from './runtime-filesystems.js';

/** Upstream's housekeeping interval for container stats. */
export const STATS_PERIOD_MS = 10_000;

/** Disk space and inodes, as du counts them. */
interface DiskUse {
  bytes: number;
  inodes: number;
}

/** The regular files directly in `dir`, each as du counts it; undefined when `dir` cannot be read. */
function filesIn(dir: string): DiskUse | undefined {
  const names = listDirSync(dir);
  if (!names) return undefined;
  const use = { bytes: 0, inodes: 0 };
  for (const n of names) {
    const s = statSyncOrUndefined(`${dir}/${n}`);
    if (!s?.isFile()) continue;
    use.bytes += s.blocks * 512;
    use.inodes++;
  }
  return use;
}

/**
 * The disk space and inodes of a container's log directory, itself and its files, as upstream's du
 * of it counts them (read synchronously, lib/fs-util.ts; the kubelet writes no subdirectories there).
 */
function logDirUsage(dir: string): DiskUse | undefined {
  const files = filesIn(dir);
  if (!files) return undefined;
  return { bytes: files.bytes + (statSyncOrUndefined(dir)?.blocks ?? 0) * 512, inodes: files.inodes + 1 };
}

/**
 * What a pod's ephemeral storage counts beside its containers and volumes (upstream getPodLogStats and
 * getPodEtcHostsStats): the files directly under its log directory, where a runtime such as kata or gVisor writes
 * pod-level logs, and the hosts file the kubelet writes for it. Either one that is not there counts nothing.
 */
function podOwnFiles(podLogDir: string, etcHosts: string): DiskUse {
  const logs = filesIn(podLogDir) ?? { bytes: 0, inodes: 0 };
  const hosts = statSyncOrUndefined(etcHosts);
  return hosts?.isFile() ? { bytes: logs.bytes + hosts.blocks * 512, inodes: logs.inodes + 1 } : logs;
}

/** Samples and serves. */
export class StatsCollector {
  private last: StatsSnapshot | undefined;
  private samples = 0;

  constructor(
    private readonly deps: {
      runtime: CriRuntime;
      rootDir: string;
      podLogsDir: string;
      clock: Clock;
      logger: Logger;
      periodMs?: number;
      /** The KubeletSeparateDiskGC gate (beta, on): off, the containers' filesystem is the image filesystem. */
      separateDiskGc?: boolean;
      /** The kubelet's and the pods' cgroups (system-containers.ts), asked at each sample. */
      systemCgroups?: () => {
        kubelet?: CgroupDirs;
        runtime?: CgroupDirs;
        misc?: CgroupDirs;
        pods?: CgroupDirs;
        burstable?: CgroupDirs;
        besteffort?: CgroupDirs;
      };
      /** A container's cgroup (its pod's cgroup and its ID, as cAdvisor finds it), when the kubelet can name it. */
      containerCgroup?: (podUid: string, containerId: string) => CgroupDirs | undefined;
      /**
       * A pod's own cgroup, when the kubelet makes pods' cgroups on a CRI runtime (cgroupsPerQOS):
       * pods are then sampled there (pod-cgroup-samples.ts), never by ListPodSandboxStats.
       */
      podCgroup?: (podUid: string) => { dirs: CgroupDirs; hostNetwork: boolean } | undefined;
    },
  ) {}

  /** The latest snapshot (undefined before the first sample). */
  snapshot(): StatsSnapshot | undefined {
    return this.last;
  }

  private details?: { of: StatsSnapshot; byId: Map<string, CgroupDetail>; netByPod: Map<string, NetDevStats[]> };

  /**
   * The cgroup details of the latest snapshot's containers, by ID (what /metrics/cadvisor adds):
   * read when first asked for a snapshot, so a node nobody scrapes pays nothing for them and
   * scrapes cost one read per sample however many come.
   */
  containerDetails(): ReadonlyMap<string, CgroupDetail> {
    return this.readDetails().byId;
  }

  /**
   * Each pod's interfaces with cAdvisor's packet and drop counters (from a process of one of its containers), read as
   * containerDetails.
   */
  podNetDev(): ReadonlyMap<string, NetDevStats[]> {
    return this.readDetails().netByPod;
  }

  /**
   * A container's pressure stall information (the Summary's), read with its cgroup details — only
   * on cgroup v2, which has it: on v1 nothing is read for it.
   */
  containerPressure(id: string): PressureByResource | undefined {
    const first = this.last?.containers[0];
    if (!first || this.deps.containerCgroup?.(first.podUid, first.id)?.version !== 2) return undefined;
    return this.readDetails().byId.get(id)?.pressure;
  }

  private readDetails(): { byId: Map<string, CgroupDetail>; netByPod: Map<string, NetDevStats[]> } {
    const snap = this.last;
    if (!snap || !this.deps.containerCgroup) return { byId: new Map(), netByPod: new Map() };
    if (this.details?.of === snap) return this.details;
    const byId = new Map<string, CgroupDetail>();
    const netByPod = new Map<string, NetDevStats[]>();
    const deviceName = machineDeviceNamer();
    for (const c of snap.containers) {
      const dirs = this.deps.containerCgroup(c.podUid, c.id);
      const detail = dirs && readCgroupDetail(dirs, deviceName);
      if (!detail) continue;
      byId.set(c.id, detail);
      const pid = netByPod.has(c.podUid) ? undefined : detail.firstPid;
      if (pid !== undefined) netByPod.set(c.podUid, processNetDev(pid));
    }
    this.details = { of: snap, byId, netByPod };
    return this.details;
  }

  /** Number of samples taken. */
  get sampleCount(): number {
    return this.samples;
  }

  /** Takes one sample. */
  async sample(): Promise<StatsSnapshot> {
    const atMs = this.deps.clock.now();
    const prev = this.last;
    // The node's own figures first, at atMs (the rates are against it).
    const cpuNs = nodeCpuNs();
    const memory = nodeMemory();
    const network = nodeNetwork();
    const rlimit = nodeRlimit();
    const pressure = systemPressure();
    const { podCgroup, containerCgroup } = this.deps;
    const [fs, stats, imageFsInfo, sandboxStats] = await Promise.all([
      fsUsage(this.deps.rootDir),
      this.deps.runtime.runtime.listContainerStats().catch((err: unknown) => {
        this.deps.logger.debug({ err: messageOf(err) }, 'ListContainerStats failed');
        return [];
      }),
      this.deps.runtime.images.imageFsInfo().catch((): cri.ImageFsInfo => ({ image_filesystems: [] })),
      podCgroup
        ? undefined
        : this.deps.runtime.runtime.listPodSandboxStats().catch((err: unknown) => {
            this.deps.logger.debug({ err: messageOf(err) }, 'ListPodSandboxStats failed');
            return [];
          }),
    ]);
    const runtimeFs = await runtimeFilesystems(imageFsInfo, {
      rootDir: this.deps.rootDir,
      separateDiskGc: this.deps.separateDiskGc !== false,
    });
    const logsFs = await fsUsage(this.deps.podLogsDir);
    const cgroups = this.deps.systemCgroups?.() ?? {};
    const rate = (cur: { cpuNs: number }, before: { cpuNs: number } | undefined) =>
      prev && before ? nanoCores({ cpuNs: before.cpuNs, atMs: prev.atMs }, { cpuNs: cur.cpuNs, atMs }) : undefined;
    const withRate = (c: SystemContainerSample, before: SystemContainerSample | undefined) => ({
      ...c,
      nanoCores: rate(c, before),
    });
    const sampleOf = (
      dirs: CgroupDirs | undefined,
      before: SystemContainerSample | undefined,
    ): SystemContainerSample | undefined => {
      const u = dirs && readCgroupUsage(dirs);
      return u
        ? withRate(
            {
              cpuNs: u.cpuNs,
              rss: u.rssBytes,
              usage: u.memoryUsageBytes,
              workingSet: u.workingSetBytes,
              pageFaults: u.pageFaults,
              majorPageFaults: u.majorPageFaults,
              limit: u.limitBytes,
            },
            before,
          )
        : undefined;
    };
    const ownProcess = (): SystemContainerSample => {
      const r = process.resourceUsage();
      const rss = process.memoryUsage().rss;
      return withRate(
        {
          cpuNs: (r.userCPUTime + r.systemCPUTime) * 1000,
          rss,
          usage: rss,
          workingSet: rss,
          pageFaults: r.minorPageFault + r.majorPageFault,
          majorPageFaults: r.majorPageFault,
        },
        prev?.kubelet,
      );
    };
    const kubelet = sampleOf(cgroups.kubelet, prev?.kubelet) ?? ownProcess();
    const prevById = new Map((prev?.containers ?? []).map((c) => [c.id, c]));
    const containers: ContainerSample[] = [];
    const podFiles = new Map<string, DiskUse>();
    for (const s of stats) {
      const l = s.attributes.labels ?? {};
      const uid = l[PodUidLabel];
      if (!uid) continue;
      const name = l[ContainerNameLabel] ?? s.attributes.metadata?.name ?? '';
      const c: ContainerSample = {
        id: s.attributes.id,
        name,
        podUid: uid,
        podName: l[PodNameLabel] ?? '',
        podNamespace: l[PodNamespaceLabel] ?? '',
        atMs,
      };
      const cpu = s.cpu?.usage_core_nano_seconds?.value;
      if (cpu !== undefined && cpu !== null) {
        c.cpuNs = Number(cpu);
        const p = prevById.get(c.id);
        c.nanoCores =
          p?.cpuNs !== undefined ? nanoCores({ cpuNs: p.cpuNs, atMs: p.atMs }, { cpuNs: c.cpuNs, atMs }) : undefined;
        const fromRuntime = s.cpu?.usage_nano_cores?.value;
        if (c.nanoCores === undefined && fromRuntime) c.nanoCores = Number(fromRuntime);
      }
      const mem = s.memory;
      if (mem?.working_set_bytes) c.workingSet = Number(mem.working_set_bytes.value);
      if (mem?.usage_bytes) c.usage = Number(mem.usage_bytes.value);
      if (mem?.rss_bytes) c.rss = Number(mem.rss_bytes.value);
      if (mem?.page_faults) c.pageFaults = Number(mem.page_faults.value);
      if (mem?.major_page_faults) c.majorPageFaults = Number(mem.major_page_faults.value);
      if (mem?.available_bytes) c.available = Number(mem.available_bytes.value);
      if (s.swap?.swap_usage_bytes) c.swapUsage = Number(s.swap.swap_usage_bytes.value);
      if (s.swap?.swap_available_bytes) c.swapAvailable = Number(s.swap.swap_available_bytes.value);
      if (s.writable_layer?.used_bytes) c.rootfsUsed = Number(s.writable_layer.used_bytes.value);
      if (s.writable_layer?.inodes_used) c.rootfsInodesUsed = Number(s.writable_layer.inodes_used.value);
      const podLogDir = join(this.deps.podLogsDir, `${c.podNamespace}_${c.podName}_${uid}`);
      const logs = logDirUsage(join(podLogDir, name));
      c.logsUsed = logs?.bytes;
      c.logsInodesUsed = logs?.inodes;
      containers.push(c);
      if (!podFiles.has(uid))
        podFiles.set(uid, podOwnFiles(podLogDir, join(podDir(this.deps.rootDir, uid), 'etc-hosts')));
    }
    const snap: StatsSnapshot = {
      atMs,
      node: {
        cpuNs,
        nanoCores: prev ? nanoCores({ cpuNs: prev.node.cpuNs, atMs: prev.atMs }, { cpuNs, atMs }) : undefined,
        memory,
        network,
        fs,
        ...runtimeFs,
        logsFs,
        rlimit,
        ...(pressure ? { pressure } : {}),
      },
      kubelet,
      podsCgroup: sampleOf(cgroups.pods, prev?.podsCgroup),
      burstableCgroup: sampleOf(cgroups.burstable, prev?.burstableCgroup),
      besteffortCgroup: sampleOf(cgroups.besteffort, prev?.besteffortCgroup),
      runtimeCgroup: sampleOf(cgroups.runtime, prev?.runtimeCgroup),
      miscCgroup: sampleOf(cgroups.misc, prev?.miscCgroup),
      containers,
      podFiles,
      pods: withPodRates(
        podCgroup
          ? podSamplesFromCgroups(containers, { pod: podCgroup, container: containerCgroup ?? (() => undefined) })
          : podSamples(sandboxStats ?? []),
        prev,
        atMs,
      ),
    };
    this.last = snap;
    this.samples++;
    return snap;
  }

  /** Samples at start, after 1 s, then every period, until `signal` aborts. */
  start({ signal }: { signal: AbortSignal }): void {
    // The second sample comes after 1 s: rates (CPU, network) need two.
    let samples = 0;
    periodically(() => this.sample(), {
      periodMs: () => (++samples === 1 ? 1000 : (this.deps.periodMs ?? STATS_PERIOD_MS)),
      signal,
      clock: this.deps.clock,
      immediately: true,
      onError: (err) => this.deps.logger.warn({ err: messageOf(err) }, 'stats collection failed'),
    });
  }
}
