/**
 * Resources → CRI Linux resources and the pod's cgroup parent (upstream kuberuntime
 * generateLinuxContainerResources and the pod container manager's cgroup names, cgroup
 * v1/cgroupfs semantics); the OOM score is oom-score-adjust.ts's. Pure.
 */
import type { Container, Pod } from '../../api/types.js';
import { bytes, hugePageResourceName, milliCpu } from '../../api/quantity.js';
import type * as cri from '../../cri/types.js';
import { qosClass } from '../status/qos-class.js';
import { applySwap, type SwapContext } from './swap.js';
import { oomScoreAdjust } from './oom-score-adjust.js';

/** Upstream constants. */
export const MIN_SHARES = 2;
export const MAX_SHARES = 262144;
export const MIN_QUOTA_PERIOD = 1000;

/** Node facts the computation needs. */
export interface ResourceContext {
  memoryCapacityBytes: number;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodUs: number;
  /** The huge page sizes the machine supports, in kB (none: no hugepage_limits). */
  hugePageSizesKb?: readonly number[];
  /** The node's swap settings (absent: the kernel accounts no swap per cgroup; nothing is written). */
  swap?: SwapContext;
  /**
   * Whether the pod (no container named) or one of its containers holds exclusive CPUs of the CPU manager: its CPU
   * limit then gets no CFS quota, as upstream's DisableCPUQuotaWithExclusiveCPUs (on) has it — pinned CPUs are
   * the container's alone, and a quota would only throttle it on them. Absent: none does (the gate off).
   */
  exclusiveCpus?: (podUid: string, containerName?: string) => boolean;
  /**
   * The kernel kills a container's processes together on OOM (`memory.oom.group`): cgroup v2 unless
   * `singleProcessOOMKill`, as upstream.
   */
  oomKillGroup?: boolean;
}

/** Whether the CPU limit of `pod` (or of its container `containerName`) is enforced with a CFS quota. */
export function cpuQuotaEnforced(
  ctx: Pick<ResourceContext, 'cpuCFSQuota' | 'exclusiveCpus'>,
  pod: Pod,
  containerName?: string,
): boolean {
  return ctx.cpuCFSQuota && !ctx.exclusiveCpus?.(pod.metadata.uid ?? '', containerName);
}

/**
 * A page size as the runtime names it (upstream HugePageUnitSizeFromByteSize): 2048 kB → `2MB`, 1048576 kB → `1GB`.
 * Pure.
 */
export function hugePageUnitSize(kb: number): string {
  const units = ['KB', 'MB', 'GB', 'TB', 'PB'];
  let size = kb;
  let i = 0;
  while (size >= 1024 && i < units.length - 1) {
    size /= 1024;
    i++;
  }
  return `${size}${units[i]}`;
}

/**
 * Huge page limits by page size as the kernel names them (upstream maybeSetHugetlb, GetHugepageLimitsFromResources):
 * for each size the machine has (`sizesKb`), `bytesOf(its resource name)`, 0 when that gives nothing. Pure.
 */
export function hugePageLimitsOf(
  sizesKb: readonly number[],
  bytesOf: (resourceName: string) => number | undefined,
): Record<string, number> {
  return Object.fromEntries(sizesKb.map((kb) => [hugePageUnitSize(kb), bytesOf(hugePageResourceName(kb)) ?? 0]));
}

/**
 * The container's huge page limits (upstream GetHugepageLimitsFromResources): every size the
 * machine supports, 0 unless the container's limits give `hugepages-<size>`. Pure.
 */
export function hugePageLimits(c: Container, sizesKb: readonly number[]): { page_size: string; limit: number }[] {
  const limits = (c.resources?.limits ?? {}) as Record<string, string>;
  return Object.entries(hugePageLimitsOf(sizesKb, (name) => bytes(limits[name]))).map(([page_size, limit]) => ({
    page_size,
    limit,
  }));
}

/** Upstream MilliCPUToShares. */
export function milliCpuToShares(milli: number): number {
  if (milli === 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milli * 1024) / 1000)));
}

/** Upstream milliCPUToQuota. */
export function milliCpuToQuota(milli: number, periodUs: number): number {
  if (milli === 0) return 0;
  return Math.max(MIN_QUOTA_PERIOD, Math.floor((milli * periodUs) / 1000));
}

/** The container's LinuxContainerResources. */
export function linuxContainerResources(pod: Pod, c: Container, ctx: ResourceContext): cri.LinuxContainerResources {
  const limitCpu = milliCpu(c.resources?.limits?.cpu);
  const requestCpu = milliCpu(c.resources?.requests?.cpu) ?? limitCpu ?? 0;
  const memory = bytes(c.resources?.limits?.memory);
  const out: cri.LinuxContainerResources = {
    cpu_shares: milliCpuToShares(requestCpu),
    oom_score_adj: oomScoreAdjust(pod, c, ctx.memoryCapacityBytes),
  };
  if (memory !== undefined) out.memory_limit_in_bytes = memory;
  applySwap(out, pod, c, ctx.swap);
  if (ctx.hugePageSizesKb?.length) out.hugepage_limits = hugePageLimits(c, ctx.hugePageSizesKb);
  // As upstream's calculateLinuxResources: with CFS quotas on, every container gets the period (a container without
  // a CPU limit a quota of 0, none), so a configured cpuCFSQuotaPeriod applies to all of them.
  if (ctx.cpuCFSQuota) {
    out.cpu_period = ctx.cpuCFSQuotaPeriodUs;
    if (limitCpu !== undefined)
      out.cpu_quota = cpuQuotaEnforced(ctx, pod, c.name) ? milliCpuToQuota(limitCpu, ctx.cpuCFSQuotaPeriodUs) : -1;
  }
  if (ctx.oomKillGroup) out.unified = { ...out.unified, 'memory.oom.group': '1' };
  return out;
}

/** How pod cgroups are named. */
export interface CgroupContext {
  cgroupsPerQOS: boolean;
  cgroupRoot: string;
  cgroupDriver: 'cgroupfs' | 'systemd';
}

export type QosClass = ReturnType<typeof qosClass>;

/**
 * The QoS tree (cgroupsPerQOS), the one place its names are spelled: `kubepods` holds every pod,
 * Guaranteed pods directly, and Burstable and BestEffort have a level each below it. A class's
 * level as path parts below the cgroup root: `['kubepods', 'burstable']`.
 */
export function qosLevel(qos: QosClass): string[] {
  return qos === 'Guaranteed' ? ['kubepods'] : ['kubepods', qos.toLowerCase()];
}

/** A QoS class's level as a cgroupfs path from a hierarchy's top: `<cgroupRoot>/kubepods/burstable`. */
export function qosLevelDir(cgroupRoot: string, qos: QosClass): string {
  return `${(cgroupRoot || '/').replace(/\/$/, '')}/${qosLevel(qos).join('/')}`;
}

/**
 * A systemd slice named by cgroup name components (upstream CgroupName.ToSystemd): each component with its dashes
 * as underscores, joined by dashes, below the cgroup root's components: `['kubepods', 'pod1-2']` under `/` →
 * `kubepods-pod1_2.slice`, under `/node` → `node-kubepods-pod1_2.slice`.
 */
function systemdSlice(cgroupRoot: string, parts: readonly string[]): string {
  const components = [...cgroupRoot.split('/').filter(Boolean), ...parts];
  return `${components.map((part) => part.replace(/-/g, '_')).join('-')}.slice`;
}

/**
 * A pod's cgroup's own name in its QoS class: `pod<uid>` (cgroupfs), or its slice (systemd:
 * `kubepods-burstable-pod<uid with _>.slice`).
 */
export function podCgroupName(uid: string, qos: QosClass, ctx: CgroupContext): string {
  if (ctx.cgroupDriver !== 'systemd') return `pod${uid}`;
  return systemdSlice(ctx.cgroupRoot, [...qosLevel(qos), `pod${uid}`]);
}

/** The pod's cgroup parent as the runtime expects it ("/kubepods/burstable/pod<uid>" or the systemd slice). */
export function podCgroupParent(pod: Pod, ctx: CgroupContext): string {
  const root = ctx.cgroupRoot || '/';
  if (!ctx.cgroupsPerQOS) return ctx.cgroupDriver === 'systemd' ? '' : root;
  const name = podCgroupName(pod.metadata.uid ?? '', qosClass(pod), ctx);
  if (ctx.cgroupDriver === 'systemd') return name;
  return `${root.replace(/\/$/, '')}/${qosLevel(qosClass(pod)).join('/')}/${name}`;
}

/** A systemd slice's cgroup (systemd's naming rule): `a-b-c.slice` lives in `/a.slice/a-b.slice/a-b-c.slice`. */
export function sliceCgroupPath(slice: string): string {
  const parts = slice.replace(/\.slice$/, '').split('-');
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('-')}.slice`).join('');
}

/**
 * A QoS class's cgroup below a hierarchy's root: `<cgroupRoot>/kubepods/burstable` (cgroupfs), or
 * `/kubepods.slice/kubepods-burstable.slice` (systemd).
 */
export function qosCgroupPath(ctx: CgroupContext, qos: QosClass): string {
  return ctx.cgroupDriver === 'systemd'
    ? sliceCgroupPath(systemdSlice(ctx.cgroupRoot, qosLevel(qos)))
    : qosLevelDir(ctx.cgroupRoot, qos);
}

/**
 * A pod's cgroup below a hierarchy's root: `/kubepods/burstable/pod<uid>` (cgroupfs, below the cgroup root), or its
 * slice with the slices it is nested in (`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice`).
 */
export function podCgroupPath(pod: Pod, ctx: CgroupContext): string {
  const parent = podCgroupParent(pod, ctx);
  if (ctx.cgroupDriver !== 'systemd') return parent;
  return parent ? sliceCgroupPath(parent) : '/';
}

/** The pod UID a pod cgroup's directory name carries (`pod<uid>`, or systemd's `…-pod<uid with _>.slice`). */
export function podUidOfCgroup(name: string, driver: CgroupContext['cgroupDriver']): string | undefined {
  if (driver !== 'systemd') return name.startsWith('pod') ? name.slice(3) : undefined;
  const match = /(?:^|-)pod([0-9a-z_]+)\.slice$/.exec(name);
  return match?.[1].replace(/_/g, '-');
}
