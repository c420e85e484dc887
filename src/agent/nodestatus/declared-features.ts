/**
 * The node's declared features (NodeDeclaredFeatures, beta and on in v1.36: `status.declaredFeatures`),
 * and the features a pod needs of its node:
 * the node-level features a v1.36 kubelet names so that the scheduler and the apiserver's admission
 * send a pod that needs one only to a node that has it. Upstream's registry
 * (k8s.io/component-helpers/nodedeclaredfeatures) declares each feature whose gate is on; with
 * v1.36's default gates a Go kubelet v1.36.2 declares the four below (its node in
 * shared/fixtures/go-kubelet-1.36). Pure.
 */
import type { Pod } from '../../api/types.js';
import { podUsesRestartAll } from '../runtime/restart-rules.js';

/** Each feature v1.36 can declare, the gate that enables it, and that gate's v1.36 default. */
const DECLARABLE: readonly { feature: string; gate: string; enabledByDefault: boolean }[] = [
  { feature: 'ExtendWebSocketsToKubelet', gate: 'ExtendWebSocketsToKubelet', enabledByDefault: true },
  {
    feature: 'InPlacePodLevelResourcesVerticalScaling',
    gate: 'InPlacePodLevelResourcesVerticalScaling',
    enabledByDefault: true,
  },
  {
    feature: 'InPlacePodVerticalScalingInitContainers',
    gate: 'InPlacePodVerticalScalingInitContainers',
    enabledByDefault: true,
  },
  {
    feature: 'RestartAllContainersOnContainerExits',
    gate: 'RestartAllContainersOnContainerExits',
    enabledByDefault: true,
  },
];

/** The gate that turns the declaration on (beta, on by default in v1.36). */
const DECLARING_GATE = 'NodeDeclaredFeatures';

/**
 * The features the node declares under the configured feature gates, sorted as upstream's list;
 * undefined when NodeDeclaredFeatures is off (the field is left out).
 */
export function declaredFeatures(gates: Readonly<Record<string, boolean>> = {}): string[] | undefined {
  if (gates[DECLARING_GATE] === false) return undefined;
  return DECLARABLE.filter((d) => gates[d.gate] ?? d.enabledByDefault)
    .map((d) => d.feature)
    .sort();
}

/**
 * The declarable features `pod` needs of the node it runs on (upstream's InferForPodScheduling over
 * the same registry): of v1.36's four, only RestartAllContainersOnContainerExits is inferred from a
 * pod's spec (a container or init container with a restart rule whose action is RestartAllContainers);
 * the others concern updates or requests, not the pod itself. Sorted.
 */
export function featuresRequiredBy(pod: Pod): string[] {
  return podUsesRestartAll(pod.spec) ? ['RestartAllContainersOnContainerExits'] : [];
}
