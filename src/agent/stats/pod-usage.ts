/**
 * A pod's CPU and memory, as /stats/summary and /metrics/resource give them: its cgroup's when the
 * runtime measures it (ListPodSandboxStats; upstream reads the pod cgroup through cAdvisor), else
 * the sum of its containers'. Pure.
 */
import type { ContainerSample, PodSample, UsageFigures } from './samples.js';

/** The sum, or undefined when there is nothing to add or one figure is missing. */
export const sumDefined = (xs: (number | undefined)[]): number | undefined =>
  xs.length && xs.every((x) => x !== undefined) ? xs.reduce((a, b) => a! + b!, 0) : undefined;

/** A pod's figures. */
export type PodUsage = UsageFigures;

/**
 * CPU from the pod's cgroup when it has a cumulative figure, memory when it has a working set; each else from
 * `containers`.
 */
export function podUsage(pod: PodSample | undefined, containers: readonly ContainerSample[]): PodUsage {
  const of = (f: (c: ContainerSample) => number | undefined) => sumDefined(containers.map(f));
  const cpu =
    pod?.cpuNs !== undefined
      ? { cpuNs: pod.cpuNs, nanoCores: pod.nanoCores }
      : { cpuNs: of((c) => c.cpuNs), nanoCores: of((c) => c.nanoCores) };
  const memory =
    pod?.workingSet !== undefined
      ? {
          workingSet: pod.workingSet,
          usage: pod.usage,
          rss: pod.rss,
          pageFaults: pod.pageFaults,
          majorPageFaults: pod.majorPageFaults,
        }
      : {
          workingSet: of((c) => c.workingSet),
          usage: of((c) => c.usage),
          rss: of((c) => c.rss),
          pageFaults: of((c) => c.pageFaults),
          majorPageFaults: of((c) => c.majorPageFaults),
        };
  return { ...cpu, ...memory };
}
