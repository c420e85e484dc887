/**
 * The pod-level cgroup settings (upstream cm.ResourceConfigForPod and the QoS cgroups), and the
 * cgroup files that carry them under cgroup v1 and v2 (pure). Guaranteed pods get CPU shares,
 * quota and a memory limit; Burstable pods shares, plus a quota or a memory limit when every
 * container declares that limit; BestEffort pods the minimum shares. podPidsLimit caps the
 * pod's processes.
 */
import type { Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';
import { podRequests, podResources } from '../admission/predicate.js';
import { MIN_SHARES, milliCpuToQuota, milliCpuToShares } from '../runtime/linux-resources.js';
import { qosClass } from '../status/generate-pod-status.js';

/** What a cgroup is set to (absent: left as the kernel made it). */
export interface ResourceConfig {
  cpuShares?: number;
  /** CFS quota in µs per period; -1: none. */
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimit?: number;
  pidsLimit?: number;
}

/** The pod's limits (upstream PodLimits: max(sum of containers and sidecars, each init container) + overhead), and whether every container declares each. */
export function podLimits(pod: Pod): { cpuMilli: number; memoryBytes: number; cpuDeclared: boolean; memoryDeclared: boolean } {
  const all = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  return {
    ...podResources(pod, 'limits'),
    cpuDeclared: all.every((c) => (milliCpu(c.resources?.limits?.cpu) ?? 0) > 0),
    memoryDeclared: all.every((c) => (bytes(c.resources?.limits?.memory) ?? 0) > 0),
  };
}

/** The pod cgroup's settings (upstream ResourceConfigForPod, then EnsureExists' pids limit). */
export function resourceConfigForPod(pod: Pod, o: { enforceCpuLimits: boolean; cpuPeriodUs: number; podPidsLimit: number }): ResourceConfig {
  const limits = podLimits(pod);
  const shares = milliCpuToShares(podRequests(pod).cpuMilli);
  const quota = o.enforceCpuLimits ? milliCpuToQuota(limits.cpuMilli, o.cpuPeriodUs) : -1;
  const pids = o.podPidsLimit > 0 ? { pidsLimit: o.podPidsLimit } : {};
  switch (qosClass(pod)) {
    case 'Guaranteed':
      return { cpuShares: shares, cpuQuota: quota, cpuPeriod: o.cpuPeriodUs, memoryLimit: limits.memoryBytes, ...pids };
    case 'Burstable':
      return {
        cpuShares: shares,
        ...(limits.cpuDeclared ? { cpuQuota: quota, cpuPeriod: o.cpuPeriodUs } : {}),
        ...(limits.memoryDeclared ? { memoryLimit: limits.memoryBytes } : {}),
        ...pids,
      };
    case 'BestEffort':
      return { cpuShares: MIN_SHARES, ...pids };
  }
}

/** Upstream CpuSharesToCpuWeight (cgroup v2). */
export function cpuSharesToWeight(shares: number): number {
  return Math.floor(1 + ((shares - 2) * 9999) / 262142);
}

/** One write: `file` of the hierarchy of `controller` (v2: the unified one, controller ""). */
export interface CgroupWrite {
  controller: string;
  file: string;
  value: string;
}

/** The files that set `c`, in the order they must be written. */
export function cgroupWrites(c: ResourceConfig, version: 1 | 2): CgroupWrite[] {
  const out: CgroupWrite[] = [];
  if (version === 1) {
    if (c.cpuShares !== undefined) out.push({ controller: 'cpu', file: 'cpu.shares', value: String(c.cpuShares) });
    if (c.cpuPeriod !== undefined) out.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(c.cpuPeriod) });
    if (c.cpuQuota !== undefined) out.push({ controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(c.cpuQuota) });
    if (c.memoryLimit !== undefined) out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: String(c.memoryLimit) });
    if (c.pidsLimit !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: String(c.pidsLimit) });
    return out;
  }
  if (c.cpuShares !== undefined) out.push({ controller: '', file: 'cpu.weight', value: String(cpuSharesToWeight(c.cpuShares)) });
  if (c.cpuQuota !== undefined || c.cpuPeriod !== undefined) {
    const quota = c.cpuQuota === undefined || c.cpuQuota < 0 ? 'max' : String(c.cpuQuota);
    out.push({ controller: '', file: 'cpu.max', value: `${quota} ${c.cpuPeriod ?? 100_000}` });
  }
  if (c.memoryLimit !== undefined) out.push({ controller: '', file: 'memory.max', value: String(c.memoryLimit) });
  if (c.pidsLimit !== undefined) out.push({ controller: '', file: 'pids.max', value: String(c.pidsLimit) });
  return out;
}

/** The node's allocatable for enforcement (upstream getNodeAllocatableAbsolute): capacity − kube- and system-reserved, never below 0. */
export function nodeAllocatableAbsolute(
  capacity: { cpuMilli: number; memoryBytes: number },
  reserved: Record<string, string>[],
): { cpuMilli: number; memoryBytes: number } {
  const sum = (name: string, parse: (q: string) => number | undefined) => reserved.reduce((n, r) => n + (parse(r[name] ?? '0') ?? 0), 0);
  return {
    cpuMilli: Math.max(0, capacity.cpuMilli - sum('cpu', milliCpu)),
    memoryBytes: Math.max(0, capacity.memoryBytes - sum('memory', bytes)),
  };
}
