/**
 * CRI ListContainerStats for the process runtime: a container's usage is its cgroup's when it has
 * one (container-cgroups.ts), else the sum over every process carrying its marker (main process,
 * children, exec sessions; proc.ts), read from /proc in one pass for all containers. Cumulative CPU only; the kubelet derives usage_nano_cores from two
 * samples.
 */
import type * as cri from '../cri/types.js';
import { markedProcesses, processTreeUsage } from './proc.js';
import type { CgroupUsage } from './container-cgroups.js';

/** The PIDs of each container of the runtime `runtimeKey`, by container ID (one /proc scan). */
export function markedPidsByContainer(runtimeKey: string): Map<string, number[]> {
  const byId = new Map<string, number[]>();
  for (const p of markedProcesses(`${runtimeKey}:`)) {
    const id = p.value.slice(runtimeKey.length + 1);
    const list = byId.get(id) ?? [];
    list.push(p.pid);
    byId.set(id, list);
  }
  return byId;
}

/** The usage of the processes `pids` in the shape a cgroup gives (no page cache: usage = working set = RSS). */
export function processUsage(pids: number[]): CgroupUsage {
  const u = processTreeUsage(pids);
  return { cpuNs: u.cpuNs, memoryUsageBytes: u.rssBytes, workingSetBytes: u.rssBytes, rssBytes: u.rssBytes };
}

/** The stats of `containers` from `usage` (their cgroups, else their processes), stamped `timestampNs`. Pure. */
export function containerStats(containers: cri.Container[], usage: readonly CgroupUsage[], timestampNs: number): cri.ContainerStats[] {
  return containers.map((v, i) => ({
    attributes: { id: v.id, metadata: v.metadata, labels: v.labels, annotations: v.annotations },
    cpu: { timestamp: timestampNs, usage_core_nano_seconds: { value: usage[i].cpuNs } },
    memory: {
      timestamp: timestampNs,
      working_set_bytes: { value: usage[i].workingSetBytes },
      usage_bytes: { value: usage[i].memoryUsageBytes },
      rss_bytes: { value: usage[i].rssBytes },
    },
  }));
}
