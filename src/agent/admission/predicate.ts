/**
 * Pod admission (upstream lifecycle.predicateAdmitHandler with the scheduler's AdmissionCheck):
 * a pod bound here is run only if it fits the node. After the sysctl and OS checks, the general
 * predicates in upstream order: resources — pods count, cpu and memory requests against
 * allocatable minus what the admitted pods request, then the extended resources the Node
 * advertises —, required node affinity and node selector,
 * node name, host ports, and (pods from the apiserver only: a static pod tolerates them all)
 * NoExecute taints. The first failure is the answer, with upstream's reason and message. Pure.
 */
import { appArmorRequired } from '../runtime/security-profiles.js';
import type { Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';
import { extendedShortfalls } from './extended-resources.js';
import { podQuantity } from './pod-quantity.js';
import { memoByObject } from '../../lib/memo.js';
import { featuresRequiredBy } from '../nodestatus/declared-features.js';

/** What admission knows of the node. */
export interface AdmissionNode {
  name: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  /** Allocatable cpu (millicores), memory (bytes) and pods. */
  allocatable: { cpuMilli: number; memoryBytes: number; pods: number };
  /** Allocatable extended resources the apiserver's Node advertises (extended-resources.ts). */
  extended?: Readonly<Record<string, number>>;
  /** Allocatable huge pages by resource name (`hugepages-2Mi`), in bytes. */
  hugePages?: Readonly<Record<string, number>>;
  /** false: the kernel enforces no AppArmor profiles, so pods that ask for one are refused. */
  appArmorEnabled?: boolean;
  /** The features the node declares (status.declaredFeatures); undefined when NodeDeclaredFeatures is off. */
  declaredFeatures?: readonly string[];
}

/** A resource the node lacks for a pod (upstream InsufficientResourceError). */
export interface Shortfall {
  /** pods, cpu, memory, huge pages, or an extended resource the Node advertises. */
  resource: string;
  requested: number;
  used: number;
  capacity: number;
}

/**
 * The verdict; a refusal for resources alone lists every resource the node lacks (a critical pod may preempt for them).
 */
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
 * The pod's effective cpu and memory of `kind` (upstream PodRequests / PodLimits): the pod-level
 * value when `spec.resources` sets it (PodLevelResources), else max(sum of containers and sidecars,
 * largest init container); plus overhead.
 */
export function podResources(
  pod: Pod,
  kind: 'requests' | 'limits',
): Readonly<{ cpuMilli: number; memoryBytes: number }> {
  return (kind === 'requests' ? requestsOf : limitsOf)(pod.spec);
}

const resourcesOf = (kind: 'requests' | 'limits') =>
  // Once per spec: admission and the Burstable QoS cgroup sum every admitted pod's requests for each new pod.
  memoByObject((spec: Pod['spec']) => {
    const overhead = (spec.overhead ?? {}) as Record<string, string>;
    const podLevel = (spec as { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } })
      .resources?.[kind];
    const cpuPod = milliCpu(podLevel?.cpu);
    const memoryPod = bytes(podLevel?.memory);
    return Object.freeze({
      cpuMilli:
        cpuPod !== undefined
          ? cpuPod + (milliCpu(overhead.cpu) ?? 0)
          : podQuantity(spec, (c) => milliCpu(c.resources?.[kind]?.cpu) ?? 0, milliCpu(overhead.cpu) ?? 0),
      memoryBytes:
        memoryPod !== undefined
          ? memoryPod + (bytes(overhead.memory) ?? 0)
          : podQuantity(spec, (c) => bytes(c.resources?.[kind]?.memory) ?? 0, bytes(overhead.memory) ?? 0),
    });
  });
const requestsOf = resourcesOf('requests');
const limitsOf = resourcesOf('limits');

/** The pod's effective requests (upstream PodRequests). */
export function podRequests(pod: Pod): Readonly<{ cpuMilli: number; memoryBytes: number }> {
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
  for (const [k, v] of Object.entries((pod.spec.nodeSelector ?? {}) as Record<string, string>))
    if (node.labels[k] !== v) return false;
  const required = (
    pod.spec.affinity as
      | {
          nodeAffinity?: {
            requiredDuringSchedulingIgnoredDuringExecution?: {
              nodeSelectorTerms?: { matchExpressions?: Requirement[]; matchFields?: Requirement[] }[];
            };
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
      (t.operator === 'Exists'
        ? !t.key || t.key === taint.key
        : t.key === taint.key && (t.value ?? '') === (taint.value ?? '')),
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
  if (admitted.length + 1 > allocatable.pods)
    out.push({ resource: 'pods', requested: 1, used: admitted.length, capacity: allocatable.pods });
  const want = podRequests(pod);
  const used = { cpuMilli: 0, memoryBytes: 0 };
  for (const p of admitted) {
    const r = podRequests(p);
    used.cpuMilli += r.cpuMilli;
    used.memoryBytes += r.memoryBytes;
  }
  if (want.cpuMilli > 0 && used.cpuMilli + want.cpuMilli > allocatable.cpuMilli)
    out.push({ resource: 'cpu', requested: want.cpuMilli, used: used.cpuMilli, capacity: allocatable.cpuMilli });
  if (want.memoryBytes > 0 && used.memoryBytes + want.memoryBytes > allocatable.memoryBytes)
    out.push({
      resource: 'memory',
      requested: want.memoryBytes,
      used: used.memoryBytes,
      capacity: allocatable.memoryBytes,
    });
  return out;
}

/** The host ports a pod's containers take (protocol, host IP — "0.0.0.0" when unset —, port). */
const hostPorts = (pod: Pod): readonly HostPort[] => hostPortsOf(pod.spec);
type HostPort = { protocol: string; ip: string; port: number };
const hostPortsOf = memoByObject((spec: Pod['spec']): readonly HostPort[] =>
  spec.containers.flatMap((c) =>
    ((c.ports ?? []) as { hostPort?: number; hostIP?: string; protocol?: string }[])
      .filter((p) => (p.hostPort ?? 0) > 0)
      .map((p) => ({ protocol: p.protocol ?? 'TCP', ip: p.hostIP || '0.0.0.0', port: p.hostPort! })),
  ),
);

/**
 * Upstream nodeports.Fits: no host port of `pod` is taken by an admitted pod on the same protocol and port, on the same
 * IP or either on 0.0.0.0.
 */
function hostPortsFree(pod: Pod, admitted: Pod[]): boolean {
  const used = admitted.flatMap(hostPorts);
  return hostPorts(pod).every(
    (w) =>
      !used.some(
        (u) =>
          u.protocol === w.protocol && u.port === w.port && (u.ip === w.ip || u.ip === '0.0.0.0' || w.ip === '0.0.0.0'),
      ),
  );
}

/**
 * Decides whether `pod` may run next to `admitted` (the pods already running here). The general
 * predicates are upstream's generalFilter, every failure in its order — resources, NodeAffinity,
 * NodeName, NodePorts, then (pods from the apiserver only) NoExecute taints — answered by the
 * first; a critical pod (`isCritical`: it may preempt for resources) is answered by the first
 * failure that is not a resource's, and a refusal for resources alone lists them (`shortfalls`).
 */
export function admitPod(
  pod: Pod,
  admitted: Pod[],
  o: { node: AdmissionNode; isStatic: boolean; isCritical?: boolean; allowedUnsafeSysctls?: readonly string[] },
): AdmitResult {
  const { node } = o;
  // The sysctl allowlist handler (upstream runs it before the predicates).
  for (const sc of (pod.spec.securityContext as { sysctls?: { name: string }[] } | undefined)?.sysctls ?? []) {
    if (!sysctlAllowed(sc.name, o.allowedUnsafeSysctls ?? []))
      return { admit: false, reason: 'SysctlForbidden', message: `forbidden sysctl: "${sc.name}" not allowlisted` };
  }
  // OS checks (upstream rejectPodAdmissionBasedOnOSSelector — on the pod's labels — and OSField): this node is linux.
  const nodeOS = node.labels['kubernetes.io/os'] ?? 'linux';
  const labelOS = pod.metadata.labels?.['kubernetes.io/os'];
  if (labelOS !== undefined && labelOS !== nodeOS)
    return {
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  const podOS = (pod.spec.os as { name?: string } | undefined)?.name;
  if (podOS && podOS !== nodeOS)
    return {
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    };
  const failed: { reason: string; message: string }[] = [];
  const predicate = (name: string, desc: string) =>
    failed.push({ reason: name, message: `Predicate ${name} failed: ${desc}` });
  if (!nodeAffinityMatches(pod, node)) predicate('NodeAffinity', "node(s) didn't match Pod's node affinity/selector");
  if (pod.spec.nodeName && pod.spec.nodeName !== node.name)
    predicate('NodeName', "node(s) didn't match the requested node name");
  if (!hostPortsFree(pod, admitted))
    predicate('NodePorts', "node(s) didn't have free ports for the requested pod ports");
  if (!o.isStatic) {
    const tols = (pod.spec.tolerations ?? []) as Toleration[];
    if (node.taints.some((t) => t.effect === 'NoExecute' && !tolerates(tols, t)))
      predicate('TaintToleration', "node(s) had taints that the pod didn't tolerate");
  }
  const short = shortfalls(pod, admitted, node.allocatable);
  const extended = extendedShortfalls(pod, admitted, node.extended ?? {}, node.hugePages);
  if ((short.length || extended.length) && !(o.isCritical && failed.length)) {
    const { resource, requested, used, capacity } = [...short, ...extended][0];
    const message = `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`;
    return {
      admit: false,
      reason: `OutOf${resource}`,
      message,
      ...(failed.length ? {} : { shortfalls: [...short, ...extended] }),
    };
  }
  if (failed.length) return { admit: false, ...failed[0] };
  // Upstream's AppArmor admit handler.
  if (node.appArmorEnabled === false && appArmorRequired(pod))
    return {
      admit: false,
      reason: 'AppArmor',
      message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
    };
  // Upstream's declared features admit handler (installed while NodeDeclaredFeatures is on): a pod that needs a
  // feature this node does not declare (its gate turned off here) is refused, whatever the scheduler decided.
  const declared = node.declaredFeatures;
  const missing = declared ? featuresRequiredBy(pod).filter((feature) => !declared.includes(feature)) : [];
  if (missing.length)
    return {
      admit: false,
      reason: 'PodFeatureUnsupported',
      message: `Pod requires node features that are not available: ${missing.join(', ')}`,
    };
  return { admit: true };
}
