/**
 * cAdvisor's `id` label: a cgroup's path from its hierarchy's root. /metrics/cadvisor names pods
 * and containers by the cgroups the runtime made from the parent the kubelet gave it
 * (runtime/linux-resources.ts `podCgroupParent`), as cAdvisor reading them would. Pure.
 */
import type { Pod } from '../../api/types.js';
import { podCgroupParent, type CgroupContext } from '../runtime/linux-resources.js';

/**
 * A pod's cgroup: `/kubepods/burstable/pod<uid>` (cgroupfs, below the cgroup root), or with the
 * systemd driver its slice with the slices it is nested in (`kubepods-burstable-pod<uid>.slice`
 * lives in `/kubepods.slice/kubepods-burstable.slice/`, systemd's naming rule).
 */
export function podCgroupId(pod: Pod, ctx: CgroupContext): string {
  const parent = podCgroupParent(pod, ctx);
  if (ctx.cgroupDriver !== 'systemd') return parent;
  if (!parent) return '/';
  const parts = parent.replace(/\.slice$/, '').split('-');
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('-')}.slice`).join('');
}

/** A container's cgroup below its pod's: `<id>` with cgroupfs, containerd's `cri-containerd-<id>.scope` under systemd. */
export function containerCgroupId(podId: string, containerId: string, driver: CgroupContext['cgroupDriver']): string {
  const leaf = driver === 'systemd' ? `cri-containerd-${containerId}.scope` : containerId;
  return `${podId.replace(/\/$/, '')}/${leaf}`;
}
