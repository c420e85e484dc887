/**
 * A container's `oom_score_adj` (upstream qos.GetContainerOOMScoreAdjust, v1.36), pure. The
 * kernel's OOM score is a process's share of memory in thousandths plus this adjustment, so:
 * node-critical and Guaranteed pods' containers are killed last (-997), BestEffort ones first
 * (1000), and a Burstable container the earlier the less memory it requests, so that one using
 * more than its request scores 1000 and goes before those within theirs. The pod is the allocated
 * one: after an in-place resize the score follows the resources the kubelet gave the container.
 */
import type { Container, Pod } from '../../api/types.js';
import { bytes } from '../../api/quantity.js';
import { podQuantity } from '../admission/pod-quantity.js';
import { isCriticalPod } from '../eviction/rank.js';
import { isStaticPod } from '../podconfig/types.js';
import { qosClass } from '../status/qos-class.js';
import { isRestartableInitContainer } from './compute-pod-actions.js';

export const GUARANTEED_OOM_SCORE_ADJ = -997;
export const BEST_EFFORT_OOM_SCORE_ADJ = 1000;
const SYSTEM_NODE_CRITICAL = 'system-node-critical';

const memoryRequest = (c: Container): number => bytes(c.resources?.requests?.memory) ?? 0;

interface PodLevelRequests {
  requests?: Record<string, string>;
}
const podLevelRequests = (pod: Pod) => (pod.spec as { resources?: PodLevelRequests }).resources?.requests;

/** Upstream IsPodLevelRequestsSet: the pod sets a request of a resource pod-level resources support. */
function podLevelRequestsSet(pod: Pod): boolean {
  const requests = podLevelRequests(pod);
  return requests?.cpu !== undefined || requests?.memory !== undefined;
}

/**
 * The pod-level memory request its containers' requests leave over, shared out equally among all
 * its containers, init containers included (upstream remainingPodMemReqPerContainer; KEP 2837).
 */
function remainingPodMemoryPerContainer(pod: Pod): number {
  const podMemory = bytes(podLevelRequests(pod)?.memory) ?? 0;
  if (podMemory === 0) return 0;
  const containers = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0);
  return Math.trunc((podMemory - podQuantity(pod.spec, memoryRequest, 0)) / containers);
}

const linearAdjust = (request: number, memoryCapacityBytes: number): number =>
  1000 - Math.trunc((1000 * request) / memoryCapacityBytes);

/** The `oom_score_adj` of container `c` of `pod` on a node with `memoryCapacityBytes` of memory. */
export function oomScoreAdjust(pod: Pod, c: Container, memoryCapacityBytes: number): number {
  if (isCriticalPod(pod, isStaticPod(pod)) && pod.spec.priorityClassName === SYSTEM_NODE_CRITICAL)
    return GUARANTEED_OOM_SCORE_ADJ;
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BEST_EFFORT_OOM_SCORE_ADJ;

  const remaining = podLevelRequestsSet(pod) ? remainingPodMemoryPerContainer(pod) : 0;
  let adjust = linearAdjust(memoryRequest(c) + remaining, memoryCapacityBytes);
  // A sidecar outlives the containers it serves: it is killed no earlier than the regular
  // container that requests least.
  if (isRestartableInitContainer(pod, c)) {
    const leastRegular = Math.min(...pod.spec.containers.map(memoryRequest));
    adjust = Math.min(adjust, linearAdjust(leastRegular + remaining, memoryCapacityBytes));
  }
  // A Guaranteed pod using all the memory scores 10 with its -997: a Burstable one stays above that.
  if (adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  // And below BestEffort ones, which go first.
  if (adjust === BEST_EFFORT_OOM_SCORE_ADJ) return adjust - 1;
  return adjust;
}
