/**
 * Which pod to evict first and what its status says (upstream eviction helpers.go), pure:
 * under memory or disk pressure, pods using more than they request first, then lower priority,
 * then the most used above the request; under PID pressure, lower priority, then the most
 * processes. Critical pods (static, mirror, priority ≥ system-critical) are never candidates.
 */
import type { Container, Pod } from '../../api/types.js';
import { bytes } from '../../api/quantity.js';
import { thresholdValue, resourceOf, type Observation, type Threshold } from './signals.js';
import { SYSTEM_CRITICAL_PRIORITY } from '../runtime/shutdown-groups.js';

/** A pod with what it uses of the resource under pressure (undefined: no stats). */
export interface Candidate {
  pod: Pod;
  /** Bytes (memory, disk) or processes (pids). */
  usage?: number;
  /** Per container, for the message: name and bytes used. */
  containers?: { name: string; usage: number }[];
  /** The pod's own memory working set (its cgroup's), for the message of a pod with pod-level requests. */
  podMemory?: number;
}

/** Upstream's eviction message and the annotations of its Evicted event (what the containers used). */
export interface EvictionNotice {
  message: string;
  /** Absent for a local storage limit's eviction, as upstream's plain event. */
  annotations?: Record<string, string>;
}

/** Upstream IsCriticalPod: static, mirror, or system-critical priority. */
export function isCriticalPod(pod: Pod, isStatic: boolean): boolean {
  const annotations = pod.metadata.annotations ?? {};
  return (
    isStatic || 'kubernetes.io/config.mirror' in annotations || (pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY
  );
}

const requestOf = (c: Container, resource: 'memory' | 'ephemeral-storage') =>
  bytes(c.resources?.requests?.[resource]) ?? 0;

/** The pod's request of `resource`: its pod-level request (PodLevelResources), else its containers'. */
function podRequest(pod: Pod, resource: 'memory' | 'ephemeral-storage'): number {
  const podLevel = bytes(
    (pod.spec as { resources?: { requests?: Record<string, string> } }).resources?.requests?.[resource],
  );
  return podLevel ?? pod.spec.containers.reduce((n, c) => n + requestOf(c, resource), 0);
}

/** Candidates in eviction order for a threshold's signal. */
export function rankForEviction(cands: Candidate[], t: Threshold): Candidate[] {
  const resource = resourceOf(t.signal);
  const priority = (c: Candidate) => c.pod.spec.priority ?? 0;
  if (resource === 'pids')
    return [...cands].sort((a, b) => priority(a) - priority(b) || (b.usage ?? 0) - (a.usage ?? 0));
  const r = resource === 'memory' ? 'memory' : 'ephemeral-storage';
  const above = (c: Candidate) => (c.usage ?? 0) - podRequest(c.pod, r);
  // Upstream's exceedDiskRequests compares inodes with an `inodes` request, which no pod has.
  const request = (c: Candidate) => (resource === 'inodes' ? 0 : podRequest(c.pod, r));
  const exceeds = (c: Candidate) => (c.usage === undefined ? 2 : (c.usage ?? 0) > request(c) ? 1 : 0);
  return [...cands].sort((a, b) => exceeds(b) - exceeds(a) || priority(a) - priority(b) || above(b) - above(a));
}

/** A quantity as Kubernetes prints a binary one (`100Mi`, `48576Ki`, or plain bytes). */
export function formatBinary(n: number): string {
  const v = Math.round(n);
  for (const [suffix, size] of [
    ['Ti', 2 ** 40],
    ['Gi', 2 ** 30],
    ['Mi', 2 ** 20],
    ['Ki', 2 ** 10],
  ] as const)
    if (v !== 0 && v % size === 0) return `${v / size}${suffix}`;
  return String(v);
}

/**
 * Upstream's eviction message (evictionMessage): the resource, the threshold and what was available, the pod's use
 * when it has a pod-level memory request, and each container (regular or init; an ephemeral one has no requests to
 * compare) using more than it requests; the Evicted event's annotations name those containers, what they used and the
 * resource (`offending_containers`, `offending_containers_usage`, `starved_resource`; `offending_pod` and
 * `offending_pod_usage`), none when the pod had no stats.
 */
export function evictionMessage(t: Threshold, o: Observation, c: Candidate): EvictionNotice {
  const resource = resourceOf(t.signal);
  const fmt =
    resource === 'memory' || resource === 'ephemeral-storage' ? formatBinary : (n: number) => String(Math.round(n));
  let message = `The node was low on resource: ${resource}. Threshold quantity: ${fmt(thresholdValue(t, o.capacity))}, available: ${fmt(o.available)}. `;
  const annotations: Record<string, string> = {};
  if (!c.containers) return { message, annotations };
  const podLevelRequest = (c.pod.spec as { resources?: { requests?: Record<string, string> } }).resources?.requests
    ?.memory;
  if (resource === 'memory' && podLevelRequest !== undefined && c.podMemory !== undefined) {
    const usage = formatBinary(c.podMemory);
    message += `Pod ${c.pod.metadata.name} was using ${usage}, request is ${formatBinary(bytes(podLevelRequest) ?? 0)}, has larger consumption of memory. `;
    annotations.offending_pod = c.pod.metadata.name!;
    annotations.offending_pod_usage = usage;
  }
  const offending: { name: string; usage: string }[] = [];
  if (resource === 'memory' || resource === 'ephemeral-storage') {
    const specs = [...c.pod.spec.containers, ...(c.pod.spec.initContainers ?? [])];
    for (const u of c.containers) {
      const spec = specs.find((x) => x.name === u.name);
      if (!spec) continue;
      const request = requestOf(spec, resource);
      if (u.usage <= request) continue;
      message += `Container ${u.name} was using ${formatBinary(u.usage)}, request is ${formatBinary(request)}, has larger consumption of ${resource}. `;
      offending.push({ name: u.name, usage: formatBinary(u.usage) });
    }
  }
  annotations.offending_containers = offending.map((x) => x.name).join(',');
  annotations.offending_containers_usage = offending.map((x) => x.usage).join(',');
  annotations.starved_resource = resource;
  return { message, annotations };
}
