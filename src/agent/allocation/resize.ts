/**
 * In-place pod resize decisions (upstream pkg/kubelet/allocation, v1.36, InPlacePodVerticalScaling
 * GA): a running pod whose containers' resources changed in its spec is resized when the node can
 * hold it — it can never (more than the node's allocatable): `Infeasible`; not now (the other
 * pods' requests): `Deferred`, retried when resources free up; else the new resources are
 * allocated and then actuated container by container, each by its `resizePolicy`. The pod-level
 * resources (`spec.resources`, InPlacePodLevelResourcesVerticalScaling) are allocated and resized
 * with them, applied to the pod cgroup. Pure.
 */
import type { Container, Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';
import { podRequests, shortfalls, type AdmissionNode } from '../admission/predicate.js';
import { qosClass } from '../status/qos-class.js';
import { POD_LEVEL, type ContainerResources } from './checkpoint.js';
import { podLimits } from '../cgroups/pod-resource-config.js';
import { aggregateMessage } from '../../lib/aggregate-message.js';

/** The containers whose resources a pod allocates: init (sidecars included) and regular. */
export function allocatedContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}

/** Requests and limits as allocated: copies, empty ones left out. */
const allocationOf = (r: ContainerResources): ContainerResources => ({
  ...(r.limits && Object.keys(r.limits).length ? { limits: { ...r.limits } } : {}),
  ...(r.requests && Object.keys(r.requests).length ? { requests: { ...r.requests } } : {}),
});

/** The resources the spec asks for, by container name, and the pod's own under POD_LEVEL when it sets them. */
export function specResources(pod: Pod): Map<string, ContainerResources> {
  const out = new Map(allocatedContainers(pod).map((c) => [c.name, allocationOf(c.resources ?? {})]));
  const podLevel = allocationOf(pod.spec.resources ?? {});
  if (podLevel.limits || podLevel.requests) out.set(POD_LEVEL, podLevel);
  return out;
}

/** A quantity's value for comparison: milli-CPU, bytes, else the text. */
function valueOf(resource: string, quantity: string | undefined): string | number | undefined {
  if (quantity === undefined) return undefined;
  if (resource === 'cpu') return milliCpu(quantity) ?? quantity;
  return bytes(quantity) ?? quantity;
}

/** The resources (`cpu`, `memory`, …) whose request or limit differs between `a` and `b`. Pure. */
export function changedResources(a: ContainerResources | undefined, b: ContainerResources | undefined): string[] {
  const names = new Set([
    ...Object.keys(a?.requests ?? {}),
    ...Object.keys(a?.limits ?? {}),
    ...Object.keys(b?.requests ?? {}),
    ...Object.keys(b?.limits ?? {}),
  ]);
  return [...names]
    .filter(
      (n) =>
        valueOf(n, a?.requests?.[n]) !== valueOf(n, b?.requests?.[n]) ||
        valueOf(n, a?.limits?.[n]) !== valueOf(n, b?.limits?.[n]),
    )
    .sort();
}

/** Whether two allocations of a pod differ anywhere. */
export function allocationsDiffer(
  a: ReadonlyMap<string, ContainerResources>,
  b: ReadonlyMap<string, ContainerResources>,
): boolean {
  const names = new Set([...a.keys(), ...b.keys()]);
  return [...names].some((n) => changedResources(a.get(n), b.get(n)).length > 0);
}

/** `pod` with its containers' resources as allocated (what its containers are made with). */
export function withResources(pod: Pod, resources: ReadonlyMap<string, ContainerResources>): Pod {
  const apply = (c: Container): Container => {
    const r = resources.get(c.name);
    if (!r) return c;
    // Only requests and limits are allocated; the rest (the ResourceClaims a container uses) stays.
    const {
      limits: _limits,
      requests: _requests,
      ...rest
    } = (c.resources ?? {}) as ContainerResources & Record<string, unknown>;
    return { ...c, resources: { ...rest, ...r } };
  };
  const podLevel = resources.get(POD_LEVEL);
  return {
    ...pod,
    spec: {
      ...pod.spec,
      ...(pod.spec.initContainers ? { initContainers: pod.spec.initContainers.map(apply) } : {}),
      containers: pod.spec.containers.map(apply),
      ...(podLevel ? { resources: { ...podLevel } } : {}),
    },
  };
}

/** What to do with a pod's resize. */
export type ResizeVerdict =
  | { kind: 'none' }
  | { kind: 'accepted' }
  | { kind: 'deferred'; message: string }
  | { kind: 'infeasible'; message: string; detail: string };

/** The static CPU and memory manager policies, which pin a Guaranteed pod's CPUs and memory at admission. */
export interface ExclusivePolicies {
  cpuStatic: boolean;
  memoryStatic: boolean;
}

/**
 * A Guaranteed pod's resizable container (a regular one or a sidecar) asks for another request of
 * `resource` than it holds (upstream guaranteedPodResourceResizeRequired).
 */
function resizesRequest(desired: Pod, allocated: ReadonlyMap<string, ContainerResources>, resource: string): boolean {
  const resizable = [
    ...(desired.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'),
    ...desired.spec.containers,
  ];
  return resizable.some(
    (c) =>
      valueOf(resource, c.resources?.requests?.[resource]) !==
      valueOf(resource, allocated.get(c.name)?.requests?.[resource]),
  );
}

/**
 * Whether the pod's desired resources can be allocated (upstream's podResizesAdmitHandler): a
 * Guaranteed pod's CPU or memory under the static policy that pinned it is Infeasible (its
 * exclusive CPUs and NUMA memory are not resized in place: InPlacePodVerticalScalingExclusiveCPUs
 * and …ExclusiveMemory are alpha, off); more than the node's allocatable is Infeasible with
 * upstream's "capacity" message; not fitting next to `others` (the other active pods, as
 * allocated) is Deferred with the admission's "resource" message.
 */
export function admitResize(o: {
  desired: Pod;
  allocated: ReadonlyMap<string, ContainerResources>;
  allocatable: AdmissionNode['allocatable'];
  others: Pod[];
  exclusive?: ExclusivePolicies;
}): ResizeVerdict {
  if (!allocationsDiffer(specResources(o.desired), o.allocated)) return { kind: 'none' };
  if (qosClass(o.desired) === 'Guaranteed') {
    if (o.exclusive?.cpuStatic && resizesRequest(o.desired, o.allocated, 'cpu'))
      return {
        kind: 'infeasible',
        message: 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"',
        detail: 'guaranteed_pod_cpu_manager_static_policy',
      };
    if (o.exclusive?.memoryStatic && resizesRequest(o.desired, o.allocated, 'memory'))
      return {
        kind: 'infeasible',
        message: 'Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"',
        detail: 'guaranteed_pod_memory_manager_static_policy',
      };
  }
  const alone = shortfalls(o.desired, [], o.allocatable).filter((s) => s.resource !== 'pods');
  if (alone.length) {
    const s = alone[0];
    return {
      kind: 'infeasible',
      message: `Node didn't have enough capacity: ${s.resource}, requested: ${s.requested}, capacity: ${s.capacity}`,
      // kubelet_pod_infeasible_resizes_total's reason_detail.
      detail: 'insufficient_node_allocatable',
    };
  }
  const together = shortfalls(o.desired, o.others, o.allocatable).filter((s) => s.resource !== 'pods');
  if (together.length) {
    const s = together[0];
    return {
      kind: 'deferred',
      message: `Node didn't have enough resource: ${s.resource}, requested: ${s.requested}, used: ${s.used}, capacity: ${s.capacity}`,
    };
  }
  return { kind: 'accepted' };
}

/**
 * How a running container takes its new resources: updated in place, or restarted (resizePolicy RestartContainer).
 * Pure.
 */
export function actuationOf(c: Container, changed: readonly string[]): 'update' | 'restart' {
  const policies = (c as { resizePolicy?: { resourceName: string; restartPolicy: string }[] }).resizePolicy ?? [];
  return changed.some((r) => policies.some((p) => p.resourceName === r && p.restartPolicy === 'RestartContainer'))
    ? 'restart'
    : 'update';
}

/** The resources a resize writes, in upstream's order (doPodResizeAction): memory, then CPU. */
export const RESIZED_RESOURCES = ['memory', 'cpu'] as const;
export type ResizedResource = (typeof RESIZED_RESOURCES)[number];

/**
 * `pod` with the requests and limits of `resource` as `target` has them — its containers' and
 * its own — and the rest as they are: the pod between a resize's memory step and its CPU step. Pure.
 */
export function withResourceOf(pod: Pod, target: Pod, resource: ResizedResource): Pod {
  const mine = specResources(pod);
  const theirs = specResources(target);
  const mixed = new Map<string, ContainerResources>();
  for (const name of new Set([...mine.keys(), ...theirs.keys()])) {
    const kind = (k: 'limits' | 'requests') => {
      const out = { ...mine.get(name)?.[k] };
      delete out[resource];
      const value = theirs.get(name)?.[k]?.[resource];
      if (value !== undefined) out[resource] = value;
      return Object.keys(out).length ? { [k]: out } : {};
    };
    mixed.set(name, { ...kind('limits'), ...kind('requests') });
  }
  return withResources(pod, mixed);
}

/**
 * Whether the pod cgroup's `resource` is written before the containers' (its limit grows or
 * stays) or after them (it shrinks), so that a limit never drops below what runs under it — the
 * kernel refuses a pod's CPU quota below a container's (upstream doPodResizeAction, one resource
 * at a time). Pure.
 */
export function podCgroupFirst(before: Pod, after: Pod, resource: ResizedResource): boolean {
  const a = podLimits(before);
  const b = podLimits(after);
  return resource === 'cpu' ? b.cpuMilli >= a.cpuMilli : b.memoryBytes >= a.memoryBytes;
}

/**
 * Upstream's refusal to lower memory limits below what is in use (doPodResizeAction, v1.34+):
 * the pod's limit when it drops (its usage: its containers'), and each container updated in place
 * whose limit drops. Undefined when nothing would go below its usage; else upstream's message
 * (one reason alone, several as a Go aggregate `[a, b]`). Pure.
 */
export function memoryDecreaseRefusal(o: {
  before: Pod;
  after: Pod;
  /** The containers updated in place. */
  updated: readonly string[];
  /** Each running container's memory usage (bytes). */
  usage: ReadonlyMap<string, number>;
}): string | undefined {
  const reasons: string[] = [];
  const was = podLimits(o.before);
  const now = podLimits(o.after);
  const podUsage = [...o.usage.values()].reduce((a, b) => a + b, 0);
  if (now.memoryDeclared && (!was.memoryDeclared || now.memoryBytes < was.memoryBytes) && podUsage > now.memoryBytes)
    reasons.push(`attempting to set pod memory limit (${now.memoryBytes}) below current usage (${podUsage})`);
  const limitOf = (p: Pod, name: string) =>
    bytes(allocatedContainers(p).find((c) => c.name === name)?.resources?.limits?.memory);
  for (const name of o.updated) {
    const before = limitOf(o.before, name);
    const after = limitOf(o.after, name);
    const used = o.usage.get(name) ?? 0;
    if (after !== undefined && (before === undefined || after < before) && used > after)
      reasons.push(`attempting to set container "${name}" memory limit (${after}) below current usage (${used})`);
  }
  if (!reasons.length) return undefined;
  return `cannot decrease memory limits: ${aggregateMessage(reasons)}`;
}

/** A Deferred resize waiting for room: the pod as it asks, what it holds, since when it waits. */
export interface PendingResize {
  pod: Pod;
  allocated: ReadonlyMap<string, ContainerResources>;
  deferredSinceMs: number;
}

const QOS_RANK = { Guaranteed: 0, Burstable: 1, BestEffort: 2 } as const;

/**
 * Upstream's order of pending resizes (sortPendingResizes): those that do not increase requests
 * first, then by pod priority (higher first), then by QoS class (Guaranteed first), then the
 * longest deferred. Pure.
 */
export function comparePendingResizes(a: PendingResize, b: PendingResize): number {
  const grows = (r: PendingResize) => {
    const now = podRequests(withResources(r.pod, r.allocated));
    const asked = podRequests(r.pod);
    return asked.cpuMilli > now.cpuMilli || asked.memoryBytes > now.memoryBytes ? 1 : 0;
  };
  return (
    grows(a) - grows(b) ||
    (b.pod.spec.priority ?? 0) - (a.pod.spec.priority ?? 0) ||
    QOS_RANK[qosClass(a.pod)] - QOS_RANK[qosClass(b.pod)] ||
    a.deferredSinceMs - b.deferredSinceMs
  );
}

/**
 * `admitResize` for `candidate` as upstream's ordered retry would decide it: the pending resizes
 * ranked before it are tried first, in order, each taking its room when it fits, and the candidate
 * is weighed against what they took. `active`: every active pod as allocated, the candidate
 * included. Pure.
 */
export function admitResizeInOrder(o: {
  candidate: PendingResize;
  pending: readonly PendingResize[];
  active: readonly Pod[];
  allocatable: AdmissionNode['allocatable'];
  exclusive?: ExclusivePolicies;
}): ResizeVerdict {
  const uidOf = (p: Pod) => p.metadata.uid!;
  const held = new Map(o.active.map((p) => [uidOf(p), p]));
  const ahead = o.pending
    .filter((r) => uidOf(r.pod) !== uidOf(o.candidate.pod) && comparePendingResizes(r, o.candidate) < 0)
    .sort(comparePendingResizes);
  const othersThan = (uid: string) => [...held].filter(([u]) => u !== uid).map(([, p]) => p);
  for (const r of ahead) {
    const uid = uidOf(r.pod);
    if (!held.has(uid)) continue;
    const verdict = admitResize({
      desired: r.pod,
      allocated: r.allocated,
      allocatable: o.allocatable,
      others: othersThan(uid),
      exclusive: o.exclusive,
    });
    if (verdict.kind === 'accepted') held.set(uid, r.pod);
  }
  return admitResize({
    desired: o.candidate.pod,
    allocated: o.candidate.allocated,
    allocatable: o.allocatable,
    others: othersThan(uidOf(o.candidate.pod)),
    exclusive: o.exclusive,
  });
}
