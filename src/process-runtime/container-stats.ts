/**
 * CRI ListContainerStats for the process runtime: a container's usage is its cgroup's when it has
 * one (container-cgroups.ts), else the sum over every process carrying its marker (main process,
 * children, exec sessions; proc.ts), read from /proc in one pass for all containers. Cumulative CPU only; the kubelet
 * derives usage_nano_cores from two
 * samples.
 */
import type * as cri from '../cri/types.js';
import { nowNs } from '../lib/time.js';
import { markedProcesses, processTreeUsage } from './proc.js';
import { cgroupPathOf, cgroupPids, cgroupUsage, type CgroupUsage, type ContainerCgroups } from './container-cgroups.js';

/** The PIDs of each container of the runtime `runtimeKey`, by container ID (one /proc scan). */
function markedPidsByContainer(runtimeKey: string): Map<string, number[]> {
  const byId = new Map<string, number[]>();
  for (const p of markedProcesses(`${runtimeKey}:`)) {
    const id = p.value.slice(runtimeKey.length + 1);
    const list = byId.get(id) ?? [];
    list.push(p.pid);
    byId.set(id, list);
  }
  return byId;
}

/**
 * The usage of the processes `pids` in the shape a cgroup gives (no page cache: usage = working set = RSS; no limit).
 */
function processUsage(pids: number[]): CgroupUsage {
  const u = processTreeUsage(pids);
  return {
    cpuNs: u.cpuNs,
    memoryUsageBytes: u.rssBytes,
    workingSetBytes: u.rssBytes,
    rssBytes: u.rssBytes,
    pageFaults: u.pageFaults,
    majorPageFaults: u.majorPageFaults,
  };
}

/** The stats of `containers` from `usage` (their cgroups, else their processes), stamped `timestampNs`. Pure. */
function containerStats(
  containers: cri.Container[],
  usage: readonly CgroupUsage[],
  timestampNs: number,
): cri.ContainerStats[] {
  return containers.map((v, i) => ({
    attributes: { id: v.id, metadata: v.metadata, labels: v.labels, annotations: v.annotations },
    cpu: { timestamp: timestampNs, usage_core_nano_seconds: { value: usage[i].cpuNs } },
    memory: {
      timestamp: timestampNs,
      working_set_bytes: { value: usage[i].workingSetBytes },
      usage_bytes: { value: usage[i].memoryUsageBytes },
      rss_bytes: { value: usage[i].rssBytes },
      page_faults: { value: usage[i].pageFaults },
      major_page_faults: { value: usage[i].majorPageFaults },
      // As cAdvisor: what is left under the limit, only when there is one.
      ...(usage[i].limitBytes !== undefined
        ? { available_bytes: { value: Math.max(0, usage[i].limitBytes! - usage[i].workingSetBytes) } }
        : {}),
    },
    ...(usage[i].swapBytes !== undefined ? { swap: swapUsage(usage[i], timestampNs) } : {}),
  }));
}

/** A cgroup's swap as CRI gives it: in use, and what is left under its swap limit when it has one. */
function swapUsage(u: CgroupUsage, timestampNs: number): cri.SwapUsage {
  const used = u.swapBytes!;
  return {
    timestamp: timestampNs,
    swap_usage_bytes: { value: used },
    ...(u.swapLimitBytes !== undefined
      ? { swap_available_bytes: { value: Math.max(0, u.swapLimitBytes - used) } }
      : {}),
  };
}

const sumOf = (xs: (cri.UInt64Value | null | undefined)[]) => ({
  value: xs.reduce((a, x) => a + Number(x?.value ?? 0), 0),
});

/**
 * Each sandbox's stats: its running containers' stats, their sums and `processCounts` (by container index) summed.
 * Pure.
 */
export function sandboxStats(
  sandboxes: cri.PodSandbox[],
  containers: cri.Container[],
  stats: readonly cri.ContainerStats[],
  processCounts: readonly number[],
  timestampNs: number,
): cri.PodSandboxStats[] {
  return sandboxes.map((sb) => {
    const mine = containers.flatMap((c, i) => (c.pod_sandbox_id === sb.id ? [i] : []));
    const cs = mine.map((i) => stats[i]);
    return {
      attributes: { id: sb.id, metadata: sb.metadata, labels: sb.labels, annotations: sb.annotations },
      linux: {
        cpu: { timestamp: timestampNs, usage_core_nano_seconds: sumOf(cs.map((c) => c.cpu?.usage_core_nano_seconds)) },
        memory: {
          timestamp: timestampNs,
          working_set_bytes: sumOf(cs.map((c) => c.memory?.working_set_bytes)),
          usage_bytes: sumOf(cs.map((c) => c.memory?.usage_bytes)),
          rss_bytes: sumOf(cs.map((c) => c.memory?.rss_bytes)),
          page_faults: sumOf(cs.map((c) => c.memory?.page_faults)),
          major_page_faults: sumOf(cs.map((c) => c.memory?.major_page_faults)),
        },
        process: { timestamp: timestampNs, process_count: { value: mine.reduce((a, i) => a + processCounts[i], 0) } },
        containers: cs,
      },
    };
  });
}

/** How long a container's usage reading is reused (see UsageReader). */
const USAGE_TTL_MS = 1000;

/**
 * Usage and process count of running containers: from their cgroups (as root), else their marked
 * processes. A reading younger than USAGE_TTL_MS is reused: the kubelet's collector calls
 * ListContainerStats and ListPodSandboxStats back to back.
 */
export class UsageReader {
  private readonly cache = new Map<string, { atMs: number; usage: CgroupUsage; processes: number }>();

  constructor(
    private readonly runtimeKey: string,
    private readonly cgroups: () => ContainerCgroups | undefined,
  ) {}

  /** The stats of `running` and each one's process count, by index. */
  read(running: cri.Container[]): { stats: cri.ContainerStats[]; processCounts: number[] } {
    // The cache's age is a wait: monotonic (a wall clock stepped back froze the figures for as long).
    const now = performance.now();
    const stale = running.filter((v) => !(now - (this.cache.get(v.id)?.atMs ?? -Infinity) < USAGE_TTL_MS));
    if (stale.length) {
      const cg = this.cgroups();
      const marked = cg ? undefined : markedPidsByContainer(this.runtimeKey);
      const pathOf = (v: cri.Container) => cgroupPathOf({ id: v.id, sandboxId: v.pod_sandbox_id });
      const pids = stale.map((v) => (cg ? cgroupPids(cg, pathOf(v)) : (marked?.get(v.id) ?? [])));
      const usage = stale.map((v, i) => (cg ? cgroupUsage(cg, pathOf(v)) : undefined) ?? processUsage(pids[i]));
      stale.forEach((v, i) => this.cache.set(v.id, { atMs: now, usage: usage[i], processes: pids[i].length }));
    }
    const read = running.map((v) => this.cache.get(v.id)!);
    return {
      stats: containerStats(
        running,
        read.map((r) => r.usage),
        Number(nowNs()),
      ),
      processCounts: read.map((r) => r.processes),
    };
  }

  /** Forgets a removed container's reading. */
  forget(id: string): void {
    this.cache.delete(id);
  }
}
