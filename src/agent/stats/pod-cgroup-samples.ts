/**
 * Pods' samples read from their own cgroups, as upstream's CRI stats provider fills a pod's
 * figures through cAdvisor (it asks the runtime for pod stats only behind the
 * PodAndContainerStatsFromCRI gate): the CPU and memory of the pod's cgroup, the process count
 * summed over its containers' cgroups (the sandbox's pause process not counted), and the
 * interfaces of its network namespace, seen through a process of one of its containers (none for
 * a hostNetwork pod: its namespace is the node's).
 *
 * This takes the place of CRI ListPodSandboxStats on a runtime whose pod cgroups the kubelet
 * makes: containerd answers it by running `runc ps` for every sandbox and container and asking
 * every container's shim for its metrics again — ~1 s of CPU per call with 100 pods, every
 * sample (bench/idle.bench.ts counts it). These reads cost a few files per pod.
 */
import { readCgroupProcs, readCgroupUsage, type CgroupDirs } from '../../lib/cgroup-usage.js';
import { processNetDev } from './node-sources.js';
import { cgroupPressure, type PressureByResource } from '../../lib/pressure.js';
import type { ContainerSample, PodSample } from './samples.js';

const withPressure = (pressure: PressureByResource | undefined) => (pressure ? { pressure } : {});

/** The interface upstream names a pod's default (network.DefaultInterfaceName). */
const DEFAULT_INTERFACE = 'eth0';

/** Where a pod's and its containers' cgroups are. */
export interface PodCgroups {
  /** The pod's cgroup, and whether it shares the node's network; undefined for a pod the kubelet does not know. */
  pod(podUid: string): { dirs: CgroupDirs; hostNetwork: boolean } | undefined;
  container(podUid: string, containerId: string): CgroupDirs | undefined;
}

/** A sample for each pod that has containers in `containers`, from the cgroups (reads them now). */
export function podSamplesFromCgroups(
  containers: readonly ContainerSample[],
  cgroups: PodCgroups,
): Map<string, PodSample> {
  const byPod = new Map<string, string[]>();
  for (const c of containers) {
    const ids = byPod.get(c.podUid);
    if (ids) ids.push(c.id);
    else byPod.set(c.podUid, [c.id]);
  }
  const out = new Map<string, PodSample>();
  for (const [podUid, ids] of byPod) {
    const pod = cgroups.pod(podUid);
    if (!pod) continue;
    let processCount: number | undefined;
    let firstPid: number | undefined;
    for (const id of ids) {
      const dirs = cgroups.container(podUid, id);
      const procs = dirs && readCgroupProcs(dirs);
      if (procs?.processes === undefined) continue;
      processCount = (processCount ?? 0) + procs.processes;
      firstPid ??= procs.firstPid;
    }
    const interfaces = !pod.hostNetwork && firstPid !== undefined ? processNetDev(firstPid) : [];
    const usage = readCgroupUsage(pod.dirs, { bounds: false });
    out.set(podUid, {
      podUid,
      network: interfaces.length
        ? {
            defaultName: interfaces.some((i) => i.name === DEFAULT_INTERFACE) ? DEFAULT_INTERFACE : interfaces[0].name,
            interfaces,
          }
        : undefined,
      processCount,
      cpuNs: usage?.cpuNs,
      workingSet: usage?.workingSetBytes,
      usage: usage?.memoryUsageBytes,
      rss: usage?.rssBytes,
      pageFaults: usage?.pageFaults,
      majorPageFaults: usage?.majorPageFaults,
      ...(pod.dirs.version === 2 ? withPressure(cgroupPressure(pod.dirs.dir)) : {}),
    });
  }
  return out;
}
