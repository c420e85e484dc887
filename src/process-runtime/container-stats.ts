/**
 * CRI ListContainerStats for the process runtime: a container's usage is the sum over every
 * process carrying its marker (main process, children, exec sessions; proc.ts), read from /proc in
 * one pass for all containers. Cumulative CPU only; the kubelet derives usage_nano_cores from two
 * samples.
 */
import type * as cri from '../cri/types.js';
import { markedProcesses, processTreeUsage } from './proc.js';

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

/** The stats of `containers` from their processes, stamped `timestampNs`. */
export function containerStats(containers: cri.Container[], pidsById: ReadonlyMap<string, number[]>, timestampNs: number): cri.ContainerStats[] {
  return containers.map((v) => {
    const usage = processTreeUsage(pidsById.get(v.id) ?? []);
    return {
      attributes: { id: v.id, metadata: v.metadata, labels: v.labels, annotations: v.annotations },
      cpu: { timestamp: timestampNs, usage_core_nano_seconds: { value: usage.cpuNs } },
      memory: {
        timestamp: timestampNs,
        working_set_bytes: { value: usage.rssBytes },
        usage_bytes: { value: usage.rssBytes },
        rss_bytes: { value: usage.rssBytes },
      },
    };
  });
}
