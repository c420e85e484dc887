/**
 * The stats collector (the kubelet's stats provider, CRI flavour): every 10 s (and 1 s after
 * start, so rates exist early) it samples the node (node-sources.ts), the kubelet process, the
 * runtime's ListContainerStats, ListPodSandboxStats (pod network, process count) and ImageFsInfo,
 * and the pods' log directories, turns cumulative
 * CPU into usageNanoCores against the previous sample (rates.ts) and keeps the result in memory.
 * Requests read `snapshot()`; a request never waits for sampling and costs the same however many
 * come. Figures the runtime does not give are left out, never reported as zero.
 */
import { join } from 'node:path';
import type { CriRuntime } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import { readCgroupUsage, type CgroupDirs } from '../../lib/cgroup-usage.js';
import { listDirSync, statSyncOrUndefined } from '../../lib/fs-util.js';
import { sleep, type Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { ContainerNameLabel, PodNameLabel, PodNamespaceLabel, PodUidLabel } from '../runtime/labels.js';
import { fsUsage, nodeCpuNs, nodeMemory, nodeNetwork, nodeRlimit, type InterfaceStats } from './node-sources.js';
import { nanoCores } from './rates.js';

/** One container's sample. */
export interface ContainerSample {
  id: string;
  name: string;
  podUid: string;
  podName: string;
  podNamespace: string;
  atMs: number;
  cpuNs?: number;
  nanoCores?: number;
  workingSet?: number;
  usage?: number;
  rss?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  rootfsUsed?: number;
  rootfsInodesUsed?: number;
  logsUsed?: number;
}

/** A system container's sample. */
export interface SystemContainerSample {
  cpuNs: number;
  nanoCores?: number;
  rss: number;
  usage: number;
  workingSet: number;
}

/**
 * One pod's sandbox-level sample (CRI ListPodSandboxStats): its network, process count, and the
 * CPU and memory of its cgroup (pause and overhead included) when the runtime gives them.
 */
export interface PodSample {
  podUid: string;
  network?: { defaultName?: string; interfaces: InterfaceStats[] };
  processCount?: number;
  cpuNs?: number;
  nanoCores?: number;
  workingSet?: number;
  usage?: number;
  rss?: number;
}

/** Everything the endpoints serve. */
export interface StatsSnapshot {
  atMs: number;
  node: {
    cpuNs: number;
    nanoCores?: number;
    memory: ReturnType<typeof nodeMemory>;
    network: { interfaces: InterfaceStats[]; defaultName?: string };
    fs?: Awaited<ReturnType<typeof fsUsage>>;
    imageFs?: Awaited<ReturnType<typeof fsUsage>> & { imageUsedBytes?: number; imageInodesUsed?: number };
    logsFs?: Awaited<ReturnType<typeof fsUsage>>;
    rlimit: { maxpid: number; curproc: number };
  };
  /** The kubelet: its cgroup's figures when it has its own (system-containers.ts), else its process's. */
  kubelet: SystemContainerSample;
  /** The pods' cgroup (`kubepods`) when there is one; else the summary adds up the containers. */
  podsCgroup?: SystemContainerSample;
  /** The pods' QoS classes' cgroups (`kubepods/burstable`, `kubepods/besteffort`) when they exist: /metrics/cadvisor series. */
  burstableCgroup?: SystemContainerSample;
  besteffortCgroup?: SystemContainerSample;
  /** The named runtime and misc (system) cgroups, when configured (--runtime-cgroups, systemCgroups). */
  runtimeCgroup?: SystemContainerSample;
  miscCgroup?: SystemContainerSample;
  containers: ContainerSample[];
  /** By pod UID; empty when the runtime does not implement ListPodSandboxStats. */
  pods: Map<string, PodSample>;
}

/** A CRI UInt64Value's number; undefined when the runtime left it out. */
const num = (v: { value?: number | string | null } | null | undefined) => (v?.value !== undefined && v.value !== null ? Number(v.value) : undefined);

/** The pod samples of ListPodSandboxStats. Pure. */
export function podSamples(stats: cri.PodSandboxStats[]): Map<string, PodSample> {
  const out = new Map<string, PodSample>();
  const iface = (i: cri.NetworkInterfaceUsage): InterfaceStats => ({
    name: i.name,
    rxBytes: Number(i.rx_bytes?.value ?? 0),
    rxErrors: Number(i.rx_errors?.value ?? 0),
    txBytes: Number(i.tx_bytes?.value ?? 0),
    txErrors: Number(i.tx_errors?.value ?? 0),
  });
  for (const s of stats) {
    const uid = s.attributes?.metadata?.uid;
    if (!uid) continue;
    const net = s.linux?.network;
    const interfaces = (net?.interfaces ?? []).map(iface);
    const def = net?.default_interface?.name ? net.default_interface : undefined;
    if (def && !interfaces.some((i) => i.name === def.name)) interfaces.unshift(iface(def));
    const mem = s.linux?.memory;
    out.set(uid, {
      podUid: uid,
      network: interfaces.length ? { defaultName: def?.name ?? interfaces[0].name, interfaces } : undefined,
      processCount: num(s.linux?.process?.process_count),
      cpuNs: num(s.linux?.cpu?.usage_core_nano_seconds),
      workingSet: num(mem?.working_set_bytes),
      usage: num(mem?.usage_bytes),
      rss: num(mem?.rss_bytes),
    });
  }
  return out;
}

/** `pods` with each one's CPU rate against the previous snapshot's sample of it. */
function withPodRates(pods: Map<string, PodSample>, prev: StatsSnapshot | undefined, atMs: number): Map<string, PodSample> {
  for (const p of pods.values()) {
    const before = prev?.pods.get(p.podUid);
    if (p.cpuNs !== undefined && before?.cpuNs !== undefined) p.nanoCores = nanoCores({ cpuNs: before.cpuNs, atMs: prev!.atMs }, { cpuNs: p.cpuNs, atMs });
  }
  return pods;
}

/** Upstream's housekeeping interval for container stats. */
export const STATS_PERIOD_MS = 10_000;

/** The disk space of the files in `dir` (a container's logs), read synchronously (lib/fs-util.ts). */
function dirBytes(dir: string): number | undefined {
  const names = listDirSync(dir);
  if (!names) return undefined;
  let total = 0;
  for (const n of names) {
    const s = statSyncOrUndefined(`${dir}/${n}`);
    if (s?.isFile()) total += s.blocks * 512;
  }
  return total;
}

/** Samples and serves. */
export class StatsCollector {
  private last: StatsSnapshot | undefined;
  private samples = 0;

  constructor(
    private readonly d: {
      runtime: CriRuntime;
      rootDir: string;
      podLogsDir: string;
      clock: Clock;
      logger: Logger;
      periodMs?: number;
      /** The kubelet's and the pods' cgroups (system-containers.ts), asked at each sample. */
      systemCgroups?: () => {
        kubelet?: CgroupDirs;
        runtime?: CgroupDirs;
        misc?: CgroupDirs;
        pods?: CgroupDirs;
        burstable?: CgroupDirs;
        besteffort?: CgroupDirs;
      };
    },
  ) {}

  /** The latest snapshot (undefined before the first sample). */
  snapshot(): StatsSnapshot | undefined {
    return this.last;
  }

  /** Number of samples taken. */
  get sampleCount(): number {
    return this.samples;
  }

  /** Takes one sample. */
  async sample(): Promise<StatsSnapshot> {
    const atMs = this.d.clock.now();
    const prev = this.last;
    // The node's own figures first, at atMs (the rates are against it).
    const cpuNs = nodeCpuNs();
    const memory = nodeMemory();
    const network = nodeNetwork();
    const rlimit = nodeRlimit();
    const [fs, stats, imageFsInfo, sandboxStats] = await Promise.all([
      fsUsage(this.d.rootDir),
      this.d.runtime.runtime.listContainerStats().catch((err: unknown) => {
        this.d.logger.debug({ err: messageOf(err) }, 'ListContainerStats failed');
        return [];
      }),
      this.d.runtime.images.imageFsInfo().catch(() => []),
      this.d.runtime.runtime.listPodSandboxStats().catch((err: unknown) => {
        this.d.logger.debug({ err: messageOf(err) }, 'ListPodSandboxStats failed');
        return [];
      }),
    ]);
    const imageMount = imageFsInfo[0]?.fs_id?.mountpoint;
    const imageFsUsage = imageMount ? await fsUsage(imageMount) : undefined;
    const imageFs = imageFsUsage
      ? { ...imageFsUsage, imageUsedBytes: imageFsInfo[0]?.used_bytes?.value, imageInodesUsed: imageFsInfo[0]?.inodes_used?.value }
      : undefined;
    const logsFs = await fsUsage(this.d.podLogsDir);
    const cgroups = this.d.systemCgroups?.() ?? {};
    const rate = (cur: { cpuNs: number }, before: { cpuNs: number } | undefined) =>
      prev && before ? nanoCores({ cpuNs: before.cpuNs, atMs: prev.atMs }, { cpuNs: cur.cpuNs, atMs }) : undefined;
    const withRate = (c: SystemContainerSample, before: SystemContainerSample | undefined) => ({ ...c, nanoCores: rate(c, before) });
    const sampleOf = (dirs: CgroupDirs | undefined, before: SystemContainerSample | undefined): SystemContainerSample | undefined => {
      const u = dirs && readCgroupUsage(dirs);
      return u ? withRate({ cpuNs: u.cpuNs, rss: u.rssBytes, usage: u.memoryUsageBytes, workingSet: u.workingSetBytes }, before) : undefined;
    };
    const ownProcess = (): SystemContainerSample => {
      const cpu = process.cpuUsage();
      const rss = process.memoryUsage().rss;
      return withRate({ cpuNs: (cpu.user + cpu.system) * 1000, rss, usage: rss, workingSet: rss }, prev?.kubelet);
    };
    const kubelet = sampleOf(cgroups.kubelet, prev?.kubelet) ?? ownProcess();
    const prevById = new Map((prev?.containers ?? []).map((c) => [c.id, c]));
    const containers: ContainerSample[] = [];
    for (const s of stats) {
      const l = s.attributes.labels ?? {};
      const uid = l[PodUidLabel];
      if (!uid) continue;
      const name = l[ContainerNameLabel] ?? s.attributes.metadata?.name ?? '';
      const c: ContainerSample = { id: s.attributes.id, name, podUid: uid, podName: l[PodNameLabel] ?? '', podNamespace: l[PodNamespaceLabel] ?? '', atMs };
      const cpu = s.cpu?.usage_core_nano_seconds?.value;
      if (cpu !== undefined && cpu !== null) {
        c.cpuNs = Number(cpu);
        const p = prevById.get(c.id);
        c.nanoCores = p?.cpuNs !== undefined ? nanoCores({ cpuNs: p.cpuNs, atMs: p.atMs }, { cpuNs: c.cpuNs, atMs }) : undefined;
        const fromRuntime = s.cpu?.usage_nano_cores?.value;
        if (c.nanoCores === undefined && fromRuntime) c.nanoCores = Number(fromRuntime);
      }
      const mem = s.memory;
      if (mem?.working_set_bytes) c.workingSet = Number(mem.working_set_bytes.value);
      if (mem?.usage_bytes) c.usage = Number(mem.usage_bytes.value);
      if (mem?.rss_bytes) c.rss = Number(mem.rss_bytes.value);
      if (mem?.page_faults) c.pageFaults = Number(mem.page_faults.value);
      if (mem?.major_page_faults) c.majorPageFaults = Number(mem.major_page_faults.value);
      if (s.writable_layer?.used_bytes) c.rootfsUsed = Number(s.writable_layer.used_bytes.value);
      if (s.writable_layer?.inodes_used) c.rootfsInodesUsed = Number(s.writable_layer.inodes_used.value);
      c.logsUsed = dirBytes(join(this.d.podLogsDir, `${c.podNamespace}_${c.podName}_${uid}`, name));
      containers.push(c);
    }
    const snap: StatsSnapshot = {
      atMs,
      node: {
        cpuNs,
        nanoCores: prev ? nanoCores({ cpuNs: prev.node.cpuNs, atMs: prev.atMs }, { cpuNs, atMs }) : undefined,
        memory,
        network,
        fs,
        imageFs,
        logsFs,
        rlimit,
      },
      kubelet,
      podsCgroup: sampleOf(cgroups.pods, prev?.podsCgroup),
      burstableCgroup: sampleOf(cgroups.burstable, prev?.burstableCgroup),
      besteffortCgroup: sampleOf(cgroups.besteffort, prev?.besteffortCgroup),
      runtimeCgroup: sampleOf(cgroups.runtime, prev?.runtimeCgroup),
      miscCgroup: sampleOf(cgroups.misc, prev?.miscCgroup),
      containers,
      pods: withPodRates(podSamples(sandboxStats), prev, atMs),
    };
    this.last = snap;
    this.samples++;
    return snap;
  }

  /** Samples at start, after 1 s, then every period, until `signal` aborts. */
  start({ signal }: { signal: AbortSignal }): void {
    void (async () => {
      let first = true;
      while (!signal.aborted) {
        try {
          await this.sample();
        } catch (err) {
          this.d.logger.warn({ err: messageOf(err) }, 'stats collection failed');
        }
        await sleep(first ? 1000 : (this.d.periodMs ?? STATS_PERIOD_MS), signal, this.d.clock);
        first = false;
      }
    })();
  }
}
