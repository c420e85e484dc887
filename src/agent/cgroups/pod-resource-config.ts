/**
 * The pod-level cgroup settings (upstream cm.ResourceConfigForPod and the QoS cgroups), and the
 * cgroup files that carry them under cgroup v1 and v2 (pure). Guaranteed pods get CPU shares,
 * quota and a memory limit; Burstable pods shares, plus a quota or a memory limit when every
 * container declares that limit; BestEffort pods the minimum shares. podPidsLimit caps the
 * pod's processes.
 */
import type { Pod } from '../../api/types.js';
import { bytes, hugePageResourceName, milliCpu } from '../../api/quantity.js';
import type { HugePagePool } from '../nodestatus/machine-info.js';
import { podRequests, podResources } from '../admission/predicate.js';
import { hugePageLimitsOf, MIN_SHARES, milliCpuToQuota, milliCpuToShares } from '../runtime/linux-resources.js';
import { podRequestOf } from '../admission/extended-resources.js';
import { qosClass } from '../status/qos-class.js';
import type { ResourceConfig } from '../../lib/cgroup-limits.js';
import type * as cri from '../../cri/types.js';

/**
 * The pod's limits (upstream PodLimits: max(sum of containers and sidecars, each init container) + overhead), and
 * whether every container declares each.
 */
export function podLimits(pod: Pod): {
  cpuMilli: number;
  memoryBytes: number;
  cpuDeclared: boolean;
  memoryDeclared: boolean;
} {
  const all = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  // PodLevelResources: a pod-level limit bounds the whole pod whatever its containers declare.
  const podLevel = (pod.spec as { resources?: { limits?: Record<string, string> } }).resources?.limits ?? {};
  return {
    ...podResources(pod, 'limits'),
    cpuDeclared: (milliCpu(podLevel.cpu) ?? 0) > 0 || all.every((c) => (milliCpu(c.resources?.limits?.cpu) ?? 0) > 0),
    memoryDeclared:
      (bytes(podLevel.memory) ?? 0) > 0 || all.every((c) => (bytes(c.resources?.limits?.memory) ?? 0) > 0),
  };
}

/** What a QoS tier allows of every huge page size (upstream setHugePagesUnbounded: 1 << 62 bytes). */
export const UNBOUNDED_HUGE_PAGES = 2 ** 62;

/**
 * The pod cgroup's settings (upstream ResourceConfigForPod, then EnsureExists' pids limit): with `hugePageSizesKb`
 * (where the kernel has the hugetlb controller), each size's limit is what the pod requests of it, 0 for a size it
 * does not request, whatever its QoS class.
 */
export function resourceConfigForPod(
  pod: Pod,
  o: { enforceCpuLimits: boolean; cpuPeriodUs: number; podPidsLimit: number; hugePageSizesKb?: readonly number[] },
): ResourceConfig {
  const limits = podLimits(pod);
  const shares = milliCpuToShares(podRequests(pod).cpuMilli);
  const quota = o.enforceCpuLimits ? milliCpuToQuota(limits.cpuMilli, o.cpuPeriodUs) : -1;
  const pids = o.podPidsLimit > 0 ? { pidsLimit: o.podPidsLimit } : {};
  const hugePages = o.hugePageSizesKb?.length
    ? { hugePageLimits: hugePageLimitsOf(o.hugePageSizesKb, (name) => podRequestOf(pod, name)) }
    : {};
  switch (qosClass(pod)) {
    case 'Guaranteed':
      return {
        cpuShares: shares,
        cpuQuota: quota,
        cpuPeriod: o.cpuPeriodUs,
        memoryLimit: limits.memoryBytes,
        ...pids,
        ...hugePages,
      };
    case 'Burstable':
      return {
        cpuShares: shares,
        ...(limits.cpuDeclared ? { cpuQuota: quota, cpuPeriod: o.cpuPeriodUs } : {}),
        ...(limits.memoryDeclared ? { memoryLimit: limits.memoryBytes } : {}),
        ...pids,
        ...hugePages,
      };
    case 'BestEffort':
      return { cpuShares: MIN_SHARES, ...pids, ...hugePages };
  }
}

/**
 * The pod's resources as the runtime is told them (upstream calculateSandboxResources): CPU shares
 * from its requests (its limit when it requests none), a quota from its CPU limit (-1 when quotas
 * are not enforced), its memory limit. What UpdatePodSandboxResources carries after a resize. Pure.
 */
export function sandboxResources(
  pod: Pod,
  o: { enforceCpuLimits: boolean; cpuPeriodUs: number; cfsQuota?: boolean },
): cri.LinuxContainerResources {
  const requests = podRequests(pod);
  const limits = podLimits(pod);
  const cpuLimit = limits.cpuDeclared ? limits.cpuMilli : 0;
  const out: cri.LinuxContainerResources = {
    cpu_shares: milliCpuToShares(requests.cpuMilli === 0 && cpuLimit > 0 ? cpuLimit : requests.cpuMilli),
  };
  // With CFS quotas on, the period always, as upstream's calculateLinuxResources (a quota only with a limit).
  if (o.cfsQuota || cpuLimit > 0) out.cpu_period = o.cpuPeriodUs;
  if (cpuLimit > 0) out.cpu_quota = o.enforceCpuLimits ? milliCpuToQuota(cpuLimit, o.cpuPeriodUs) : -1;
  if (limits.memoryDeclared && limits.memoryBytes > 0) out.memory_limit_in_bytes = limits.memoryBytes;
  return out;
}

/**
 * The node's allocatable for enforcement (upstream getNodeAllocatableAbsolute): capacity − kube- and system-reserved,
 * never below 0.
 */
export function nodeAllocatableAbsolute(
  capacity: { cpuMilli: number; memoryBytes: number },
  reserved: Record<string, string>[],
): { cpuMilli: number; memoryBytes: number } {
  const sum = (name: string, parse: (q: string) => number | undefined) =>
    reserved.reduce((n, r) => n + (parse(r[name] ?? '0') ?? 0), 0);
  return {
    cpuMilli: Math.max(0, capacity.cpuMilli - sum('cpu', milliCpu)),
    memoryBytes: Math.max(0, capacity.memoryBytes - sum('memory', bytes)),
  };
}

/**
 * Each huge page pool's bytes by resource name (`hugepages-2Mi`), less what `reserved` (kube- and system-reserved) hold
 * of it, never below 0 (upstream's allocatable huge pages). Pure.
 */
export function hugePageBytesLeft(
  pools: readonly HugePagePool[],
  reserved: readonly Record<string, string>[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pool of pools) {
    const name = hugePageResourceName(pool.pageSizeKb);
    const held = reserved.reduce((n, r) => n + (bytes(r[name] ?? '0') ?? 0), 0);
    out[name] = Math.max(0, pool.pageSizeKb * 1024 * pool.pages - held);
  }
  return out;
}

/** One reserved cgroup to cap (enforceNodeAllocatable system-reserved / kube-reserved). */
export interface ReservedCgroupLimit {
  /** "system" or "kube", as upstream's messages name them. */
  who: 'system' | 'kube';
  cgroup: string;
  config: ResourceConfig;
}

/**
 * What enforceNodeAllocatable's system-reserved / kube-reserved set on their existing cgroups
 * (upstream getCgroupConfig): CPU shares, a memory limit and a pids limit from the reserved
 * amounts that are given; the "-compressible" keys the CPU shares only. Pure.
 */
export function reservedCgroupLimits(
  enforce: readonly string[],
  o: {
    cgroups: { system: string; kube: string };
    systemReserved?: Record<string, string>;
    kubeReserved?: Record<string, string>;
  },
): ReservedCgroupLimit[] {
  const out: ReservedCgroupLimit[] = [];
  for (const who of ['system', 'kube'] as const) {
    const full = enforce.includes(`${who}-reserved`);
    if (!full && !enforce.includes(`${who}-reserved-compressible`)) continue;
    const r = (who === 'system' ? o.systemReserved : o.kubeReserved) ?? {};
    const config: ResourceConfig = {};
    if (r.cpu !== undefined) config.cpuShares = milliCpuToShares(milliCpu(r.cpu) ?? 0);
    if (full && r.memory !== undefined) config.memoryLimit = bytes(r.memory) ?? 0;
    if (full && r.pid !== undefined) config.pidsLimit = Number(r.pid);
    out.push({ who, cgroup: who === 'system' ? o.cgroups.system : o.cgroups.kube, config });
  }
  return out;
}
