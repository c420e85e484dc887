/**
 * cAdvisor's `id` label: a cgroup's path from its hierarchy's root. /metrics/cadvisor names pods
 * and containers by the cgroups the runtime made from the parent the kubelet gave it
 * (runtime/linux-resources.ts `podCgroupParent`), as cAdvisor reading them would. Pure.
 */
import type { Pod } from '../../api/types.js';
import {
  podCgroupParent,
  qosLevel,
  qosLevelDir,
  type CgroupContext,
  type QosClass,
} from '../runtime/linux-resources.js';

/**
 * A pod's cgroup: `/kubepods/burstable/pod<uid>` (cgroupfs, below the cgroup root), or with the
 * systemd driver its slice with the slices it is nested in (`kubepods-burstable-pod<uid>.slice`
 * lives in `/kubepods.slice/kubepods-burstable.slice/`, systemd's naming rule).
 */
export function podCgroupId(pod: Pod, ctx: CgroupContext): string {
  const parent = podCgroupParent(pod, ctx);
  if (ctx.cgroupDriver !== 'systemd') return parent;
  return parent ? sliceId(parent) : '/';
}

/** A systemd slice's cgroup: `a-b-c.slice` lives in `/a.slice/a-b.slice/a-b-c.slice`. */
function sliceId(slice: string): string {
  const parts = slice.replace(/\.slice$/, '').split('-');
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('-')}.slice`).join('');
}

/** The cgroups of the pods' QoS tree (cgroupsPerQOS), by cAdvisor's `id`. */
export interface QosCgroupIds {
  /** `kubepods`: every pod; Guaranteed pods directly below it. */
  pods: string;
  burstable: string;
  besteffort: string;
}

/**
 * The QoS tree's cgroups: `/kubepods`, `/kubepods/burstable`, `/kubepods/besteffort` below the
 * cgroup root (cgroupfs), or `/kubepods.slice` and its `kubepods-burstable.slice` /
 * `kubepods-besteffort.slice` (systemd); undefined without cgroupsPerQOS.
 */
export function qosCgroupIds(ctx: CgroupContext): QosCgroupIds | undefined {
  if (!ctx.cgroupsPerQOS) return undefined;
  const id = (qos: QosClass) =>
    ctx.cgroupDriver === 'systemd' ? sliceId(qosLevel(qos).join('-')) : qosLevelDir(ctx.cgroupRoot, qos);
  return { pods: id('Guaranteed'), burstable: id('Burstable'), besteffort: id('BestEffort') };
}

/**
 * A container's cgroup below its pod's: `<id>` with cgroupfs, containerd's `cri-containerd-<id>.scope` under systemd.
 */
export function containerCgroupId(podId: string, containerId: string, driver: CgroupContext['cgroupDriver']): string {
  const leaf = driver === 'systemd' ? `cri-containerd-${containerId}.scope` : containerId;
  return `${podId.replace(/\/$/, '')}/${leaf}`;
}
