/**
 * What the stats collector keeps (samples of the node, the system containers, the containers and
 * the pods, in one snapshot), and the pod samples of CRI ListPodSandboxStats. Pure.
 */
import type * as cri from '../../cri/types.js';
import type { fsUsage, nodeMemory, nodeNetwork, InterfaceStats } from './node-sources.js';
import { nanoCores } from './rates.js';
import type { PressureByResource } from '../../lib/pressure.js';
import type { DiskLayout, RuntimeFilesystem } from './runtime-filesystems.js';

/** CPU and memory figures of a container or a pod; one the runtime did not give is undefined. */
export interface UsageFigures {
  cpuNs?: number;
  nanoCores?: number;
  workingSet?: number;
  usage?: number;
  rss?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** Pressure stall information, where the cgroup is read directly on cgroup v2 (KubeletPSI). */
  pressure?: PressureByResource;
}

/** One container's sample. */
export interface ContainerSample extends UsageFigures {
  id: string;
  name: string;
  podUid: string;
  podName: string;
  podNamespace: string;
  atMs: number;
  /**
   * The runtime's available_bytes (containerd: 0 without a limit; the summary reads it only for a limited container).
   */
  available?: number;
  /** Its swap in use and what is left under its swap limit, when the runtime reports swap. */
  swapUsage?: number;
  swapAvailable?: number;
  rootfsUsed?: number;
  rootfsInodesUsed?: number;
  logsUsed?: number;
  logsInodesUsed?: number;
}

/** A system container's sample. */
export interface SystemContainerSample {
  cpuNs: number;
  nanoCores?: number;
  rss: number;
  usage: number;
  workingSet: number;
  pageFaults: number;
  majorPageFaults: number;
  /** Its memory limit, when it has one (the pods' cgroup: node allocatable). */
  limit?: number;
}

/**
 * One pod's sandbox-level sample (CRI ListPodSandboxStats): its network, process count, and the
 * CPU and memory of its cgroup (pause and overhead included) when the runtime gives them.
 */
export interface PodSample extends UsageFigures {
  podUid: string;
  network?: { defaultName?: string; interfaces: InterfaceStats[] };
  processCount?: number;
  /** The runtime's available_bytes for the pod's cgroup (read only for a pod with a memory limit). */
  available?: number;
}

/** Everything the endpoints serve. */
export interface StatsSnapshot {
  atMs: number;
  node: {
    cpuNs: number;
    nanoCores?: number;
    memory: ReturnType<typeof nodeMemory>;
    network: ReturnType<typeof nodeNetwork>;
    fs?: Awaited<ReturnType<typeof fsUsage>>;
    imageFs?: RuntimeFilesystem;
    /** The containers' writable layers' filesystem: the image filesystem unless the runtime reports its own. */
    containerFs?: RuntimeFilesystem;
    /** Which filesystems are on a device of their own, once the runtime has said where its images are. */
    diskLayout?: DiskLayout;
    logsFs?: Awaited<ReturnType<typeof fsUsage>>;
    rlimit: { maxpid: number; curproc: number };
    /** The system's pressure stall information (/proc/pressure), where the kernel has PSI. */
    pressure?: PressureByResource;
  };
  /** The kubelet: its cgroup's figures when it has its own (system-containers.ts), else its process's. */
  kubelet: SystemContainerSample;
  /** The pods' cgroup (`kubepods`) when there is one; else the summary adds up the containers. */
  podsCgroup?: SystemContainerSample;
  /**
   * The pods' QoS classes' cgroups (`kubepods/burstable`, `kubepods/besteffort`) when they exist: /metrics/cadvisor
   * series.
   */
  burstableCgroup?: SystemContainerSample;
  besteffortCgroup?: SystemContainerSample;
  /** The named runtime and misc (system) cgroups, when configured (--runtime-cgroups, systemCgroups). */
  runtimeCgroup?: SystemContainerSample;
  miscCgroup?: SystemContainerSample;
  containers: ContainerSample[];
  /**
   * By pod UID, for each pod with a container: its files that count in its ephemeral storage beside its containers'
   * and volumes' (the files directly under its log directory, its etc-hosts), bytes and inodes.
   */
  podFiles: Map<string, { bytes: number; inodes: number }>;
  /** By pod UID; empty when the runtime does not implement ListPodSandboxStats. */
  pods: Map<string, PodSample>;
}

/** A CRI UInt64Value's number; undefined when the runtime left it out. */
const num = (v: { value?: number | string | null } | null | undefined) =>
  v?.value !== undefined && v.value !== null ? Number(v.value) : undefined;

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
      pageFaults: num(mem?.page_faults),
      majorPageFaults: num(mem?.major_page_faults),
      available: num(mem?.available_bytes),
    });
  }
  return out;
}

/** `pods` with each one's CPU rate against the previous snapshot's sample of it. */
export function withPodRates(
  pods: Map<string, PodSample>,
  prev: StatsSnapshot | undefined,
  atMs: number,
): Map<string, PodSample> {
  for (const p of pods.values()) {
    const before = prev?.pods.get(p.podUid);
    if (p.cpuNs !== undefined && before?.cpuNs !== undefined)
      p.nanoCores = nanoCores({ cpuNs: before.cpuNs, atMs: prev!.atMs }, { cpuNs: p.cpuNs, atMs });
  }
  return pods;
}
