/**
 * cAdvisor's `id` label: a cgroup's path from its hierarchy's root. /metrics/cadvisor names pods
 * and containers by the cgroups the runtime made from the parent the kubelet gave it
 * (runtime/linux-resources.ts `podCgroupParent`), as cAdvisor reading them would. Pure.
 */
import type { Pod } from '../../api/types.js';
import { podCgroupPath, qosCgroupPath, type CgroupContext, type QosClass } from '../runtime/linux-resources.js';

/** A pod's cgroup (runtime/linux-resources.ts `podCgroupPath`). */
export const podCgroupId = (pod: Pod, ctx: CgroupContext): string => podCgroupPath(pod, ctx);

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
  const id = (qos: QosClass) => qosCgroupPath(ctx, qos);
  return { pods: id('Guaranteed'), burstable: id('Burstable'), besteffort: id('BestEffort') };
}

/**
 * A container's cgroup below its pod's: `<id>` with cgroupfs, containerd's `cri-containerd-<id>.scope` under systemd.
 */
export function containerCgroupId(podId: string, containerId: string, driver: CgroupContext['cgroupDriver']): string {
  const leaf = driver === 'systemd' ? `cri-containerd-${containerId}.scope` : containerId;
  return `${podId.replace(/\/$/, '')}/${leaf}`;
}
