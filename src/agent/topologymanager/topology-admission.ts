/**
 * The topology manager's pod admission (upstream topologymanager scope_container / scope_pod,
 * with the device, CPU and memory managers as hint providers and allocators, in that order). With
 * a policy other than `none`, each container's hints (the `container` scope) or the pod's (`pod`)
 * from the managers are merged under the policy (hint-merge.ts); a pod the policy refuses is
 * rejected (`TopologyAffinityError`), and each container's devices, CPUs and memory are then
 * allocated on the chosen NUMA nodes first. With `none`, they are allocated without hints. A
 * failed allocation refuses the pod as its manager says (`UnexpectedAdmissionError`,
 * full-pcpus-only's `SMTAlignmentError`). The device manager asks its plugins, so an admission with devices is a
 * promise; one without stays synchronous.
 */
import type { Container, Pod } from '../../api/types.js';
import type { AllocationRefusal } from '../admission/allocation-refusal.js';
import { mergeHints, type ResourceHints, type TopologyHint, type TopologyPolicy } from './hint-merge.js';
import type { NumaDistances } from './numa-distances.js';

export interface TopologyManagerConfig {
  policy: TopologyPolicy;
  scope: 'container' | 'pod';
  /** The machine's NUMA nodes. */
  numaNodes: readonly number[];
  /** Their distances, with `prefer-closest-numa-nodes` (policy-options.ts). */
  distances?: NumaDistances;
}

/** Upstream's TopologyAffinityError as an admission result. */
export const TOPOLOGY_AFFINITY_ERROR: AllocationRefusal = {
  reason: 'TopologyAffinityError',
  message: 'Resources cannot be allocated with Topology locality',
};

/** The CPU manager as the topology manager sees it (cpumanager/cpu-manager.ts). */
export interface CpuProvider {
  beginAdmission(pod: Pod, active: readonly Pod[]): void;
  containerHints(pod: Pod, c: Container): ResourceHints;
  podHints(pod: Pod): ResourceHints;
  allocateContainer(pod: Pod, c: Container, numaNodes?: readonly number[]): AllocationRefusal | undefined;
}

/** The memory manager as the topology manager sees it (memorymanager/memory-manager.ts). */
export interface MemoryProvider {
  beginAdmission(pod: Pod, active: readonly Pod[], sourcesSeen: boolean): void;
  containerHints(pod: Pod, c: Container): ResourceHints[];
  podHints(pod: Pod): ResourceHints[];
  /** `hint`: the merged hint, undefined with the `none` policy. */
  allocateContainer(pod: Pod, c: Container, hint?: TopologyHint): AllocationRefusal | undefined;
}

/** The device manager as the topology manager sees it (devices/device-manager.ts). */
export interface DeviceProvider {
  needsDevices(pod: Pod): boolean;
  beginAdmission(pod: Pod, active: readonly Pod[], sourcesSeen: boolean): void;
  containerHints(pod: Pod, c: Container, numaNodes: readonly number[]): ResourceHints[];
  podHints(pod: Pod, numaNodes: readonly number[]): ResourceHints[];
  allocateContainer(
    pod: Pod,
    c: Container,
    numaNodes: readonly number[] | undefined,
  ): AllocationRefusal | undefined | Promise<AllocationRefusal | undefined>;
  endAdmission(pod: Pod, admitted: boolean): void;
}

type Admission = AllocationRefusal | undefined | Promise<AllocationRefusal | undefined>;

/** The CPU manager's hints as one resource's list, none when it has no preference. */
const cpuResources = (hints: ResourceHints): ResourceHints[] => (hints === undefined ? [] : [hints]);

/**
 * Told of each allocation the policy guarantees to be NUMA-aligned (single-numa-node), and of
 * each it refused for want of alignment: per container, or per pod with the pod scope.
 */
export interface AlignmentObserver {
  aligned(scope: 'container' | 'pod'): void;
  failed(scope: 'container' | 'pod'): void;
}

/** The refusal of `pod`, or undefined when it is admitted (its devices and CPUs allocated). */
export function admitWithTopology(
  providers: { cpus?: CpuProvider; devices?: DeviceProvider; memory?: MemoryProvider },
  t: TopologyManagerConfig,
  pod: Pod,
  active: readonly Pod[],
  alignment?: AlignmentObserver,
  /** Every pod source has delivered its pods: stale memory assignments can go. */
  sourcesSeen = false,
): Admission {
  const { cpus, memory } = providers;
  const devices = providers.devices?.needsDevices(pod) ? providers.devices : undefined;
  cpus?.beginAdmission(pod, active);
  memory?.beginAdmission(pod, active, sourcesSeen);
  devices?.beginAdmission(pod, active, sourcesSeen);
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const policy = t.policy;
  const podHint =
    policy !== 'none' && t.scope === 'pod'
      ? mergeHints(
          policy,
          t.numaNodes,
          [
            ...(devices?.podHints(pod, t.numaNodes) ?? []),
            ...cpuResources(cpus?.podHints(pod)),
            ...(memory?.podHints(pod) ?? []),
          ],
          t.distances,
        )
      : undefined;
  // Only single-numa-node guarantees alignment (upstream IsAlignmentGuaranteed).
  const guaranteed = policy === 'single-numa-node' ? alignment : undefined;
  const scope = t.scope;
  /** Allocates from container `i` on; a promise from the first container whose devices the plugins are asked for. */
  const from = (i: number): Admission => {
    for (; i < containers.length; i++) {
      const c = containers[i];
      let hint: TopologyHint | undefined;
      if (policy !== 'none') {
        const merged =
          podHint ??
          mergeHints(
            policy,
            t.numaNodes,
            [
              ...(devices?.containerHints(pod, c, t.numaNodes) ?? []),
              ...cpuResources(cpus?.containerHints(pod, c)),
              ...(memory?.containerHints(pod, c) ?? []),
            ],
            t.distances,
          );
        if (!merged.admit) {
          guaranteed?.failed(scope);
          return TOPOLOGY_AFFINITY_ERROR;
        }
        hint = merged.hint;
      }
      const affinity = hint?.numaNodes;
      const next = i + 1;
      const thenCpus = (refused: AllocationRefusal | undefined) => {
        const failed = refused ?? cpus?.allocateContainer(pod, c, affinity) ?? memory?.allocateContainer(pod, c, hint);
        if (!failed && scope === 'container') guaranteed?.aligned('container');
        return failed;
      };
      const ofDevices = devices?.allocateContainer(pod, c, affinity);
      if (ofDevices instanceof Promise) return ofDevices.then((refused) => thenCpus(refused) ?? from(next));
      const refused = thenCpus(ofDevices);
      if (refused) return refused;
    }
    if (scope === 'pod') guaranteed?.aligned('pod');
    return undefined;
  };
  const end = (refused: AllocationRefusal | undefined) => {
    devices?.endAdmission(pod, !refused);
    return refused;
  };
  const result = from(0);
  if (!(result instanceof Promise)) return end(result);
  return result.then(end, (err: unknown) => {
    devices?.endAdmission(pod, false);
    throw err;
  });
}
