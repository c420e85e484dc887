/**
 * A pod's QoS class, as upstream's qos.GetPodQOS: the class the apiserver set in the pod's status when it created the
 * pod (it never changes, and the apiserver refuses a status that changes it), else the class its spec gives
 * (ComputePodQOS) — static pods, whose spec is the file's. Quantities are compared by value, as Go's Quantity.Equal:
 * a file may spell a request "500m" and its limit "0.5". Pure.
 */
import type { Container, Pod } from '../../api/types.js';
import { parseQuantity } from '../../api/quantity.js';
import { memoByObject } from '../../lib/memo.js';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const KNOWN = new Set<string>(['Guaranteed', 'Burstable', 'BestEffort']);

/** The pod's QoS class: its status's when set, else its spec's. */
export function qosClass(pod: Pod): QosClass {
  const stated = (pod.status as { qosClass?: string } | undefined)?.qosClass;
  return stated && KNOWN.has(stated) ? (stated as QosClass) : qosOfSpec(pod.spec);
}

type Resources = NonNullable<Container['resources']>;

/**
 * Upstream resourceQOS over one set of requirements, requests defaulted to limits as the apiserver (and the kubelet's
 * file source) default them: none at all is BestEffort; CPU and memory each asked for at its limit is Guaranteed,
 * neither asked for BestEffort; anything else Burstable.
 */
function resourcesQos(resources: Resources | undefined): QosClass {
  const limits = (resources?.limits ?? {}) as Record<string, string>;
  const requests = { ...limits, ...resources?.requests } as Record<string, string>;
  if (!Object.keys(requests).length && !Object.keys(limits).length) return 'BestEffort';
  let qos: QosClass | undefined;
  for (const name of ['cpu', 'memory']) {
    const request = parseQuantity(requests[name]) ?? 0;
    const limit = parseQuantity(limits[name]) ?? 0;
    if (request !== limit) return 'Burstable';
    const none = request === 0;
    if (qos === undefined) qos = none ? 'BestEffort' : 'Guaranteed';
    else if (none !== (qos === 'BestEffort')) return 'Burstable';
  }
  return qos!;
}

// Once per spec: the Burstable QoS cgroup's update reads every active pod's class for each new pod.
const qosOfSpec = memoByObject((spec: Pod['spec']): QosClass => {
  // PodLevelResources: the pod's own requirements decide the class whenever the pod has them (upstream: non-nil).
  const podLevel = (spec as { resources?: Resources | null }).resources;
  if (podLevel) return resourcesQos(podLevel);
  let pod: QosClass | undefined;
  for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
    const qos = resourcesQos(container.resources);
    if (qos === 'Burstable') return qos;
    if (pod === undefined) pod = qos;
    else if (pod !== qos) return 'Burstable';
  }
  return pod ?? 'BestEffort';
});
