/**
 * The topology manager's pod admission (upstream topologymanager scope_container / scope_pod with
 * the CPU manager as hint provider): with a policy other than `none`, each container's hints (the
 * `container` scope) or the pod's (`pod`) are merged under the policy, a pod the policy refuses is
 * rejected (`TopologyAffinityError`), and each container's CPUs are allocated aligned to the
 * chosen NUMA nodes; with `none`, allocated without hints. An allocation that fails is refused as
 * the CPU manager says (`UnexpectedAdmissionError`, or full-pcpus-only's `SMTAlignmentError`).
 */
import type { Pod } from '../../api/types.js';
import type { CpuManager } from './cpu-manager.js';
import { mergeHints, type TopologyPolicy } from './topology-hints.js';

export interface TopologyManagerConfig {
  policy: TopologyPolicy;
  scope: 'container' | 'pod';
  /** The machine's NUMA nodes. */
  numaNodes: readonly number[];
}

/** Upstream's TopologyAffinityError as an admission result. */
export const TOPOLOGY_AFFINITY_ERROR = {
  reason: 'TopologyAffinityError',
  message: 'Resources cannot be allocated with Topology locality',
};

/** The refusal of `pod`, or undefined when it is admitted (its CPUs allocated). */
export function admitWithTopology(
  m: CpuManager,
  t: TopologyManagerConfig,
  pod: Pod,
  active: readonly Pod[],
): { reason: string; message: string } | undefined {
  m.beginAdmission(pod, active);
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  if (t.policy === 'none') {
    for (const c of containers) {
      const refused = m.allocateContainer(pod, c);
      if (refused) return refused;
    }
    return undefined;
  }
  const podHint = t.scope === 'pod' ? mergeHints(t.policy, t.numaNodes, m.podHints(pod)) : undefined;
  if (podHint && !podHint.admit) return TOPOLOGY_AFFINITY_ERROR;
  for (const c of containers) {
    const { hint, admit } = podHint ?? mergeHints(t.policy, t.numaNodes, m.containerHints(pod, c));
    if (!admit) return TOPOLOGY_AFFINITY_ERROR;
    const refused = m.allocateContainer(pod, c, hint.numaNodes);
    if (refused) return refused;
  }
  return undefined;
}
