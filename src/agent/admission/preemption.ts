/**
 * Which pods a critical pod preempts (upstream pkg/kubelet/preemption): a critical pod (static,
 * mirror, or of system-critical priority) refused for resources alone is admitted after the
 * kubelet evicts pods that free what it lacks. The victims are chosen by QoS class — BestEffort
 * first, then Burstable, then Guaranteed, each class only as far as the classes before it fall
 * short — and within a class by "distance": the squared, normalised shortfall a candidate leaves,
 * the smaller request (memory, then cpu) winning a tie. Pure.
 */
import { podRequestOf } from './extended-resources.js';
import type { Pod } from '../../api/types.js';
import { isStaticPod } from '../podconfig/types.js';
import { isCriticalPod } from '../eviction/rank.js';
import { qosClass } from '../status/qos-class.js';
import { podRequests, type Shortfall } from './predicate.js';

/** The victim's status message and event (upstream's `message`, reason events.PreemptContainer). */
export const PREEMPTED = { reason: 'Preempting', message: 'Preempted in order to admit critical pod' };
/** The victim's DisruptionTarget condition message. */
export const PREEMPTED_DISRUPTION = 'Pod was preempted by Kubelet to accommodate a critical pod.';

/** Upstream kubetypes.IsCriticalPod (static, mirror, or system-critical priority: eviction/rank.ts's). */
export const isCritical = (pod: Pod): boolean => isCriticalPod(pod, isStaticPod(pod));

/** Upstream kubetypes.Preemptable: a critical pod may preempt a non-critical one, and a pod one of lower priority. */
export function preemptable(preemptor: Pod, preemptee: Pod): boolean {
  if (isCritical(preemptor) && !isCritical(preemptee)) return true;
  const a = preemptor.spec.priority;
  const b = preemptee.spec.priority;
  return a !== undefined && b !== undefined && a > b;
}

type Requirement = { resource: Shortfall['resource']; quantity: number };

/**
 * Upstream resource.GetResourceRequest: a pod takes one pod slot, its cpu in millicores, its memory in bytes, its count
 * of an extended resource.
 */
function request(pod: Pod, resource: Requirement['resource']): number {
  if (resource === 'pods') return 1;
  if (resource !== 'cpu' && resource !== 'memory') return podRequestOf(pod, resource);
  const r = podRequests(pod);
  return resource === 'cpu' ? r.cpuMilli : r.memoryBytes;
}

/** What is still lacking once `pods` are gone. */
function subtract(reqs: Requirement[], pods: Pod[]): Requirement[] {
  return reqs
    .map((r) => ({
      resource: r.resource,
      quantity: pods.reduce((q, p) => (q <= 0 ? q : q - request(p, r.resource)), r.quantity),
    }))
    .filter((r) => r.quantity > 0);
}

/** How far `pod` leaves the requirements from being met (0: it meets them all). */
function distance(reqs: Requirement[], pod: Pod): number {
  return reqs.reduce((d, r) => {
    const left = r.quantity - request(pod, r.resource);
    return left > 0 ? d + (left / r.quantity) ** 2 : d;
  }, 0);
}

function smallerRequest(a: Pod, b: Pod): boolean {
  for (const res of ['memory', 'cpu'] as const) {
    if (request(a, res) !== request(b, res)) return request(a, res) < request(b, res);
  }
  return true;
}

const describe = (reqs: Requirement[]) => `[${reqs.map((r) => `(res: ${r.resource}, q: ${r.quantity}), `).join('')}]`;

/** Upstream getPodsToPreemptByDistance: repeatedly the candidate closest to meeting what is left. */
function byDistance(candidates: Pod[], reqs: Requirement[]): Pod[] | string {
  const pods = [...candidates];
  const chosen: Pod[] = [];
  while (reqs.length) {
    if (!pods.length) return `no set of running pods found to reclaim resources: ${describe(reqs)}`;
    let best = 0;
    let bestDistance = reqs.length + 1;
    pods.forEach((p, i) => {
      const d = distance(reqs, p);
      if (d < bestDistance || (d === bestDistance && smallerRequest(p, pods[best]))) {
        bestDistance = d;
        best = i;
      }
    });
    reqs = subtract(reqs, [pods[best]]);
    chosen.push(pods[best]);
    pods[best] = pods[pods.length - 1];
    pods.pop();
  }
  return chosen;
}

/**
 * The pods to evict so that `pod` fits, from the active `pods`, given what the node lacks; a
 * string (upstream's error) when no set of them would free enough.
 */
export function podsToPreempt(pod: Pod, pods: Pod[], short: Shortfall[]): Pod[] | string {
  const reqs: Requirement[] = short.map((s) => ({
    resource: s.resource,
    quantity: s.requested - (s.capacity - s.used),
  }));
  const byQos = { BestEffort: [] as Pod[], Burstable: [] as Pod[], Guaranteed: [] as Pod[] };
  for (const p of pods) if (preemptable(pod, p)) byQos[qosClass(p)].push(p);
  const { BestEffort: bestEffort, Burstable: burstable, Guaranteed: guaranteed } = byQos;
  const unmet = subtract(reqs, [...bestEffort, ...burstable, ...guaranteed]);
  if (unmet.length) return `no set of running pods found to reclaim resources: ${describe(unmet)}`;
  const g = byDistance(guaranteed, subtract(reqs, [...bestEffort, ...burstable]));
  if (typeof g === 'string') return g;
  const b = byDistance(burstable, subtract(reqs, [...bestEffort, ...g]));
  if (typeof b === 'string') return b;
  const be = byDistance(bestEffort, subtract(reqs, [...b, ...g]));
  if (typeof be === 'string') return be;
  return [...be, ...b, ...g];
}
