/**
 * Pod admission (upstream lifecycle.predicateAdmitHandler with the scheduler's generalFilter):
 * a pod bound here is run only if it fits the node. Checks, in upstream order: node name, node
 * selector and required node affinity, (static pods only) NoExecute taints, then resources —
 * pods count, cpu and memory requests against allocatable minus what the admitted pods request.
 * The first failure is the answer, with upstream's reason and message. Pure.
 */
import { appArmorRequired } from '../runtime/security-profiles.js';
import type { Container, Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';

/** What admission knows of the node. */
export interface AdmissionNode {
  name: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  /** Allocatable cpu (millicores), memory (bytes) and pods. */
  allocatable: { cpuMilli: number; memoryBytes: number; pods: number };
  /** false: the kernel enforces no AppArmor profiles, so pods that ask for one are refused. */
  appArmorEnabled?: boolean;
}

/** A resource the node lacks for a pod (upstream InsufficientResourceError). */
export interface Shortfall {
  resource: 'pods' | 'cpu' | 'memory';
  requested: number;
  used: number;
  capacity: number;
}

/** The verdict; a refusal for resources alone lists every resource the node lacks (a critical pod may preempt for them). */
export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string; shortfalls?: Shortfall[] };

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

/**
 * The pod's effective cpu and memory of `kind` (upstream PodRequests / PodLimits): max(sum of
 * containers and sidecars, largest init container) + overhead.
 */
export function podResources(pod: Pod, kind: 'requests' | 'limits'): { cpuMilli: number; memoryBytes: number } {
  const sum = (cs: Container[], f: (c: Container) => number) => cs.reduce((n, c) => n + f(c), 0);
  const cpu = (c: Container) => milliCpu(c.resources?.[kind]?.cpu) ?? 0;
  const mem = (c: Container) => bytes(c.resources?.[kind]?.memory) ?? 0;
  const inits = pod.spec.initContainers ?? [];
  const sidecars = inits.filter((c) => c.restartPolicy === 'Always');
  const overhead = (pod.spec.overhead ?? {}) as Record<string, string>;
  return {
    cpuMilli: Math.max(sum(pod.spec.containers, cpu) + sum(sidecars, cpu), ...inits.map(cpu), 0) + (milliCpu(overhead.cpu) ?? 0),
    memoryBytes: Math.max(sum(pod.spec.containers, mem) + sum(sidecars, mem), ...inits.map(mem), 0) + (bytes(overhead.memory) ?? 0),
  };
}

/** The pod's effective requests (upstream PodRequests). */
export function podRequests(pod: Pod): { cpuMilli: number; memoryBytes: number } {
  return podResources(pod, 'requests');
}

function matches(req: Requirement, value: string | undefined): boolean {
  switch (req.operator) {
    case 'In':
      return value !== undefined && (req.values ?? []).includes(value);
    case 'NotIn':
      return value === undefined || !(req.values ?? []).includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
      return value !== undefined && Number(value) > Number(req.values?.[0]);
    case 'Lt':
      return value !== undefined && Number(value) < Number(req.values?.[0]);
    default:
      return false;
  }
}

/** nodeSelector and requiredDuringSchedulingIgnoredDuringExecution (terms ORed, expressions ANDed). */
export function nodeAffinityMatches(pod: Pod, node: AdmissionNode): boolean {
  for (const [k, v] of Object.entries((pod.spec.nodeSelector ?? {}) as Record<string, string>)) if (node.labels[k] !== v) return false;
  const required = (
    pod.spec.affinity as
      | {
          nodeAffinity?: {
            requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: { matchExpressions?: Requirement[]; matchFields?: Requirement[] }[] };
          };
        }
      | undefined
  )?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  const terms = required.nodeSelectorTerms ?? [];
  return terms.some((t) => {
    if (!t.matchExpressions?.length && !t.matchFields?.length) return false;
    return (
      (t.matchExpressions ?? []).every((r) => matches(r, node.labels[r.key])) &&
      (t.matchFields ?? []).every((r) => r.key === 'metadata.name' && matches(r, node.name))
    );
  });
}

/** Whether any of `tols` tolerates `taint` (upstream ToleratesTaint). */
export function tolerates(tols: Toleration[], taint: AdmissionNode['taints'][number]): boolean {
  return tols.some(
    (t) =>
      (!t.effect || t.effect === taint.effect) &&
      (t.operator === 'Exists' ? !t.key || t.key === taint.key : t.key === taint.key && (t.value ?? '') === (taint.value ?? '')),
  );
}

/** Upstream sysctl.SafeSysctlAllowlist: sysctls every pod may set. */
export const SAFE_SYSCTLS = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
];

/** Whether `name` is allowed by the safe list or `allowedUnsafe` (exact names or `prefix*` globs). */
export function sysctlAllowed(name: string, allowedUnsafe: readonly string[]): boolean {
  const n = name.replace(/\//g, '.');
  return [...SAFE_SYSCTLS, ...allowedUnsafe].some((a) => (a.endsWith('*') ? n.startsWith(a.slice(0, -1)) : a === n));
}

/** Every resource the node lacks for `pod` next to `admitted`, in upstream's order (pods, cpu, memory). */
export function shortfalls(pod: Pod, admitted: Pod[], allocatable: AdmissionNode['allocatable']): Shortfall[] {
  const out: Shortfall[] = [];
  if (admitted.length + 1 > allocatable.pods) out.push({ resource: 'pods', requested: 1, used: admitted.length, capacity: allocatable.pods });
  const want = podRequests(pod);
  const used = admitted
    .map(podRequests)
    .reduce((a, b) => ({ cpuMilli: a.cpuMilli + b.cpuMilli, memoryBytes: a.memoryBytes + b.memoryBytes }), { cpuMilli: 0, memoryBytes: 0 });
  if (want.cpuMilli > 0 && used.cpuMilli + want.cpuMilli > allocatable.cpuMilli)
    out.push({ resource: 'cpu', requested: want.cpuMilli, used: used.cpuMilli, capacity: allocatable.cpuMilli });
  if (want.memoryBytes > 0 && used.memoryBytes + want.memoryBytes > allocatable.memoryBytes)
    out.push({ resource: 'memory', requested: want.memoryBytes, used: used.memoryBytes, capacity: allocatable.memoryBytes });
  return out;
}

/** Decides whether `pod` may run next to `admitted` (the pods already running here). */
export function admitPod(pod: Pod, admitted: Pod[], o: { node: AdmissionNode; isStatic: boolean; allowedUnsafeSysctls?: readonly string[] }): AdmitResult {
  const { node } = o;
  const predicate = (name: string): AdmitResult => ({ admit: false, reason: name, message: `Predicate ${name} failed` });
  // The sysctl allowlist handler (upstream runs it before the predicates).
  for (const sc of (pod.spec.securityContext as { sysctls?: { name: string }[] } | undefined)?.sysctls ?? []) {
    if (!sysctlAllowed(sc.name, o.allowedUnsafeSysctls ?? []))
      return { admit: false, reason: 'SysctlForbidden', message: `forbidden sysctl: "${sc.name}" not allowlisted` };
  }
  // OS checks (upstream rejectPodAdmissionBasedOnOSSelector / OSField): this node is linux.
  const nodeOS = node.labels['kubernetes.io/os'] ?? 'linux';
  const selOS = (pod.spec.nodeSelector as Record<string, string> | undefined)?.['kubernetes.io/os'];
  if (selOS && selOS !== nodeOS)
    return {
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  const podOS = (pod.spec.os as { name?: string } | undefined)?.name;
  if (podOS && podOS !== nodeOS) return { admit: false, reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  if (pod.spec.nodeName && pod.spec.nodeName !== node.name) return predicate('NodeName');
  if (!nodeAffinityMatches(pod, node)) return predicate('NodeAffinity');
  if (o.isStatic) {
    const tols = (pod.spec.tolerations ?? []) as Toleration[];
    if (node.taints.some((t) => t.effect === 'NoExecute' && !tolerates(tols, t))) return predicate('TaintToleration');
  }
  const short = shortfalls(pod, admitted, node.allocatable);
  if (short.length) {
    const { resource, requested, used, capacity } = short[0];
    return {
      admit: false,
      reason: `OutOf${resource}`,
      message: `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
      shortfalls: short,
    };
  }
  // Upstream's AppArmor admit handler.
  if (node.appArmorEnabled === false && appArmorRequired(pod))
    return { admit: false, reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' };
  return { admit: true };
}
