/**
 * What the rest of the kubelet sees of the CPU manager (cpu-manager.ts): the executor a new
 * container's cpuset, the pod-resources API the CPUs, the metrics the counts.
 */
import type { CpuSet } from '../../lib/cpuset.js';

/** What the executor asks of the CPU manager for a container it creates. */
export interface ContainerCpusets {
  /** The cpuset to create it with (undefined: none, the `none` policy). */
  cpusetFor(podUid: string, name: string): string | undefined;
  /** It was created with `cpuset` (the reconcile loop need not write it again). */
  created(podUid: string, name: string, id: string, cpuset: string): void;
}

/** What upstream's CPU manager metrics report (metrics/cpu-manager-metrics.ts). */
export interface CpuManagerCounts {
  pinningRequests: number;
  pinningErrors: number;
  /** The shared pool less the reserved CPUs, in millicores (0 with `none`). */
  sharedPoolMilli: number;
  /**
   * The CPUs of every exclusive assignment (a reused init container's counted again, as upstream's countExclusiveCPUs).
   */
  exclusiveCpus: number;
  /**
   * The CPUs allocated exclusively, by NUMA node (upstream's allocation_per_numa: the union of the assignments, nodes
   * with none left out).
   */
  allocatedPerNuma: ReadonlyMap<number, number>;
  /** The topology manager's pod admissions, and those refused (TopologyAffinityError or a failed allocation). */
  topologyAdmissions: number;
  topologyErrors: number;
  /**
   * Allocations aligned, and failures to align, by scope and boundary (upstream's
   * container_aligned_compute_resources counters): NUMA alignment is counted under the
   * single-numa-node policy, which guarantees it; physical cores (`physicalCpu`, with the static
   * policy only) under full-pcpus-only.
   */
  alignment: {
    numaNode: Record<AlignmentScope, AlignmentCount>;
    physicalCpu?: AlignmentCount;
  };
}

export type AlignmentScope = 'container' | 'pod';
export interface AlignmentCount {
  aligned: number;
  failed: number;
}

/**
 * The pod-resources API's and the metrics' view: the CPUs exclusive allocations come from, a container's, the counts.
 */
export interface PodCpus {
  allocatableCpus(): CpuSet;
  exclusiveCpus(podUid: string, name: string): CpuSet;
  counts(): CpuManagerCounts;
}

/** Why a container's CPUs cannot be allocated, as the admission result upstream's GetPodAdmitResult makes of it. */

/** A running container the reconcile loop keeps on its cpuset. */
export interface RunningContainer {
  podUid: string;
  name: string;
  id: string;
}
