/**
 * The Node object and its status as pure functions (upstream kubelet_node_status.go initialNode
 * and the nodestatus setters): labels, taints, capacity and allocatable (capacity minus
 * kube/system reserved and the hard eviction thresholds), addresses, daemon endpoints, node info,
 * images, runtime handlers, and the four conditions with upstream reasons, messages and heartbeat/transition times.
 */
import { hugePageBytesLeft } from '../cgroups/pod-resource-config.js';
import type { AdmissionNode } from '../admission/predicate.js';
import { binaryQuantity, bytes, formatQuantity, hugePageResourceName, milliCpu } from '../../api/quantity.js';
import { rfc3339 } from '../../lib/time.js';
import { thresholdBytes } from '../eviction/signals.js';
import type { MachineInfo } from './machine-info.js';
import type { NodeFeatures, NodeRuntimeHandler } from '../runtime/runtime-state.js';
import { aggregateMessage } from '../../lib/aggregate-message.js';

type Obj = Record<string, unknown>;

/** A node condition (core/v1 NodeCondition). */
export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastHeartbeatTime: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** Settings from the kubelet configuration. */
export interface NodeSettings {
  nodeName: string;
  nodeIP: string;
  hostname: string;
  port: number;
  maxPods: number;
  /** podsPerCore (0: only maxPods counts). */
  podsPerCore?: number;
  /**
   * localStorageCapacityIsolation (default true): false leaves ephemeral-storage out of capacity and allocatable, as
   * upstream.
   */
  localStorageCapacityIsolation?: boolean;
  /** nodeStatusMaxImages (-1: all; default 50). */
  maxImages?: number;
  nodeLabels: Record<string, string>;
  registerWithTaints: { key: string; value?: string; effect: string }[];
  /**
   * --cloud-provider=external: the Node waits for a cloud controller manager (taint, provided IP, its addresses kept).
   */
  externalCloudProvider?: boolean;
  /** Whether --node-ip named `nodeIP` (else it was detected). */
  nodeIPSpecified?: boolean;
  /** The second address of a dual-stack --node-ip. */
  secondaryNodeIP?: string;
  providerID: string;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  evictionHard: Record<string, string>;
  kubeletVersion: string;
  /** status.declaredFeatures (declared-features.ts); absent when NodeDeclaredFeatures is off. */
  declaredFeatures?: string[];
}

/** What the status is computed from at one moment. */
export interface NodeStatusInput {
  machine: MachineInfo;
  /** "containerd://1.6.20" */
  runtimeVersion: string;
  /** Runtime and network errors (NetworkReady=false …); empty when healthy; undefined until first checked. */
  runtimeErrors: string[] | undefined;
  /** The runtime's images: their id (the order's tie-break), names and size. */
  images: { id: string; names: string[]; sizeBytes: number }[];
  /**
   * The runtime's handlers (CRI Status; RecursiveReadOnlyMounts, beta and on in upstream 1.32): status.runtimeHandlers
   * when any.
   */
  runtimeHandlers?: NodeRuntimeHandler[];
  /** What the runtime supports that pods may ask for (CRI Status features): status.features when it says. */
  features?: NodeFeatures;
  /** The device plugins' resources: every device as capacity, the healthy ones as allocatable. */
  /** The device plugins' resources, and those removed since their plugin stayed away (the Node drops them). */
  devices?: { capacity: Record<string, number>; allocatable: Record<string, number>; removed?: string[] };
  /** The eviction manager's pressure conditions (MemoryPressure, DiskPressure, PIDPressure). */
  pressure?: ReadonlySet<string>;
  /** The attachable volumes in use (upstream VolumesInUse setter), sorted; none: the field goes. */
  volumesInUse?: string[];
  previous?: NodeCondition[];
  nowMs: number;
}

/**
 * Bytes as the Go kubelet's resource.Quantity (BinarySI) gives them, in the canonical form the apiserver stores:
 * "16318440Ki", "4Gi", "56911972091".
 */
const byteQuantity = (n: number) => formatQuantity(Math.floor(n), 'BinarySI');

/** The labels the kubelet owns (upstream updateDefaultLabels) plus --node-labels. */
export function nodeLabels(s: NodeSettings, m: MachineInfo): Record<string, string> {
  return {
    'beta.kubernetes.io/arch': m.architecture,
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': m.architecture,
    'kubernetes.io/hostname': s.hostname,
    'kubernetes.io/os': 'linux',
    ...s.nodeLabels,
  };
}

/** What admission knows of the node: name, labels, taints, allocatable, AppArmor, declared features. */
export function admissionNode(s: NodeSettings, m: MachineInfo): AdmissionNode {
  const resources = nodeResources(s, m);
  return {
    name: s.nodeName,
    labels: nodeLabels(s, m),
    taints: s.registerWithTaints,
    allocatable: resources.allocatableNumbers,
    hugePages: resources.allocatableHugePages,
    appArmorEnabled: m.appArmorEnabled,
    declaredFeatures: s.declaredFeatures,
  };
}

/** Capacity and allocatable (upstream GetNodeAllocatable: capacity − kubeReserved − systemReserved − hard eviction). */
export function nodeResources(
  s: NodeSettings,
  m: MachineInfo,
): {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  allocatableNumbers: { cpuMilli: number; memoryBytes: number; pods: number };
  allocatableHugePages: Record<string, number>;
} {
  const reserved = (name: string, parse: (q: string) => number | undefined) =>
    (parse(s.kubeReserved[name] ?? '0') ?? 0) + (parse(s.systemReserved[name] ?? '0') ?? 0);
  const cpuMilli = Math.max(0, m.cpuCores * 1000 - reserved('cpu', milliCpu));
  const memoryBeforeHugePages = Math.max(
    0,
    m.memoryBytes - reserved('memory', bytes) - thresholdBytes(s.evictionHard['memory.available'], m.memoryBytes),
  );
  const storage = Math.max(
    0,
    m.ephemeralStorageBytes -
      reserved('ephemeral-storage', bytes) -
      thresholdBytes(s.evictionHard['nodefs.available'], m.ephemeralStorageBytes),
  );
  // Upstream's MachineInfo setter: podsPerCore × cores, never above maxPods.
  const pods = s.podsPerCore && s.podsPerCore > 0 ? Math.min(s.podsPerCore * m.cpuCores, s.maxPods) : s.maxPods;
  // Each huge page pool is a resource (`hugepages-2Mi`: its pages' bytes), less what is reserved of
  // it; the memory it holds is not allocatable as memory (upstream CapacityFromMachineInfo, MachineInfo setter).
  const hugeCapacity: Record<string, string> = {};
  const hugeAllocatable: Record<string, string> = {};
  const allocatableHugePages = hugePageBytesLeft(m.hugePages ?? [], [s.kubeReserved, s.systemReserved]);
  let hugeBytes = 0;
  for (const pool of m.hugePages ?? []) {
    const name = hugePageResourceName(pool.pageSizeKb);
    const total = pool.pageSizeKb * 1024 * pool.pages;
    hugeCapacity[name] = binaryQuantity(total);
    hugeAllocatable[name] = binaryQuantity(allocatableHugePages[name]);
    hugeBytes += total;
  }
  const memoryBytes = Math.max(0, memoryBeforeHugePages - hugeBytes);
  const capacity = {
    cpu: String(m.cpuCores),
    'ephemeral-storage': byteQuantity(m.ephemeralStorageBytes),
    ...hugeCapacity,
    memory: byteQuantity(m.memoryBytes),
    pods: String(pods),
  };
  const allocatable = {
    cpu: cpuMilli % 1000 === 0 ? String(cpuMilli / 1000) : `${cpuMilli}m`,
    'ephemeral-storage': byteQuantity(storage),
    ...hugeAllocatable,
    memory: byteQuantity(memoryBytes),
    pods: String(pods),
  };
  if (s.localStorageCapacityIsolation === false) {
    delete (capacity as Record<string, string>)['ephemeral-storage'];
    delete (allocatable as Record<string, string>)['ephemeral-storage'];
  }
  return { capacity, allocatable, allocatableNumbers: { cpuMilli, memoryBytes, pods }, allocatableHugePages };
}

/**
 * The taint a Node carries until a cloud controller manager has initialized it (upstream TaintExternalCloudProvider).
 */
export const UNINITIALIZED_TAINT = {
  key: 'node.cloudprovider.kubernetes.io/uninitialized',
  value: 'true',
  effect: 'NoSchedule',
};

/**
 * The annotation by which a kubelet has the attach/detach controller attach its node's volumes (upstream
 * ControllerManagedAttachAnnotation; a kubelet's enableControllerAttachDetach, always on here).
 */
export const CONTROLLER_MANAGED_ATTACH_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';

/**
 * What the kubelet changes on a Node that was registered before it started (upstream tryRegisterWithAPIServer:
 * updateDefaultLabels and reconcileCMADAnnotationWithExistingNode): each of its own labels whose value differs, and
 * the controller-managed attach-detach annotation. The metadata of a merge patch, or undefined when nothing differs.
 * Labels and annotations others set are left alone. Pure.
 */
export function existingNodeMetadataPatch(
  ownLabels: Readonly<Record<string, string>>,
  existing: { labels?: Record<string, string>; annotations?: Record<string, string> },
): { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined {
  const labels = Object.fromEntries(Object.entries(ownLabels).filter(([k, v]) => existing.labels?.[k] !== v));
  const patch: { labels?: Record<string, string>; annotations?: Record<string, string> } = {};
  if (Object.keys(labels).length) patch.labels = labels;
  if (existing.annotations?.[CONTROLLER_MANAGED_ATTACH_ANNOTATION] !== 'true')
    patch.annotations = { [CONTROLLER_MANAGED_ATTACH_ANNOTATION]: 'true' };
  return Object.keys(patch).length ? patch : undefined;
}

/** The Node the kubelet registers (upstream initialNode). */
export function initialNode(s: NodeSettings, m: MachineInfo): Obj {
  const taints = [...s.registerWithTaints, ...(s.externalCloudProvider ? [UNINITIALIZED_TAINT] : [])];
  const annotations: Record<string, string> = { [CONTROLLER_MANAGED_ATTACH_ANNOTATION]: 'true' };
  // The IP the cloud controller manager is to use, when the operator named one.
  if (s.externalCloudProvider && s.nodeIPSpecified)
    annotations['alpha.kubernetes.io/provided-node-ip'] = s.secondaryNodeIP
      ? `${s.nodeIP},${s.secondaryNodeIP}`
      : s.nodeIP;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: s.nodeName, labels: nodeLabels(s, m), annotations },
    spec: { ...(s.providerID ? { providerID: s.providerID } : {}), ...(taints.length ? { taints } : {}) },
  };
}

/**
 * The addresses (upstream NodeAddress setter): with an external cloud provider and no --node-ip, only the hostname (the
 * manager adds the rest).
 */
export function nodeAddresses(s: NodeSettings): { type: string; address: string }[] {
  const hostname = { type: 'Hostname', address: s.hostname };
  if (s.externalCloudProvider && !s.nodeIPSpecified) return [hostname];
  const secondary = s.secondaryNodeIP ? [{ type: 'InternalIP', address: s.secondaryNodeIP }] : [];
  return [{ type: 'InternalIP', address: s.nodeIP }, ...secondary, hostname];
}

/** One condition: `healthy` is the status when `ok`; the transition time moves only when the status does. */
function condition(
  type: string,
  ok: boolean,
  o: {
    good: [string, string];
    bad: [string, string];
    healthy: 'True' | 'False';
    prev: NodeCondition | undefined;
    now: string;
  },
): NodeCondition {
  const { healthy, prev, now } = o;
  const status = ok ? healthy : healthy === 'True' ? 'False' : 'True';
  const [reason, message] = ok ? o.good : o.bad;
  const transition = prev && prev.status === status ? prev.lastTransitionTime : now;
  return { type, status, lastHeartbeatTime: now, lastTransitionTime: transition, reason, message };
}

/** The node conditions, in upstream order (MemoryPressure, DiskPressure, PIDPressure, Ready). */
export function nodeConditions(
  runtimeErrors: string[] | undefined,
  previous: NodeCondition[] | undefined,
  nowMs: number,
  pressure: ReadonlySet<string> = new Set(),
): NodeCondition[] {
  const now = rfc3339(nowMs);
  const prev = (t: string) => previous?.find((c) => c.type === t);
  const errs = runtimeErrors ?? ['container runtime status check may not have completed yet'];
  const notReady = aggregateMessage(errs);
  return [
    condition('MemoryPressure', !pressure.has('MemoryPressure'), {
      good: ['KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
      bad: ['KubeletHasInsufficientMemory', 'kubelet has insufficient memory available'],
      healthy: 'False',
      prev: prev('MemoryPressure'),
      now,
    }),
    condition('DiskPressure', !pressure.has('DiskPressure'), {
      good: ['KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
      bad: ['KubeletHasDiskPressure', 'kubelet has disk pressure'],
      healthy: 'False',
      prev: prev('DiskPressure'),
      now,
    }),
    condition('PIDPressure', !pressure.has('PIDPressure'), {
      good: ['KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
      bad: ['KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
      healthy: 'False',
      prev: prev('PIDPressure'),
      now,
    }),
    condition('Ready', errs.length === 0, {
      good: ['KubeletReady', 'kubelet is posting ready status'],
      bad: ['KubeletNotReady', notReady],
      healthy: 'True',
      prev: prev('Ready'),
      now,
    }),
  ];
}

/** The full node status. */
export function nodeStatus(s: NodeSettings, i: NodeStatusInput): Obj {
  const resources = nodeResources(s, i.machine);
  const capacity: Record<string, string> = { ...resources.capacity };
  const allocatable: Record<string, string> = { ...resources.allocatable };
  for (const [name, n] of Object.entries(i.devices?.capacity ?? {})) capacity[name] = String(n);
  for (const [name, n] of Object.entries(i.devices?.allocatable ?? {})) allocatable[name] = String(n);
  return {
    capacity,
    allocatable,
    conditions: nodeConditions(i.runtimeErrors, i.previous, i.nowMs, i.pressure),
    addresses: nodeAddresses(s),
    daemonEndpoints: { kubeletEndpoint: { Port: s.port } },
    nodeInfo: {
      machineID: i.machine.machineID,
      systemUUID: i.machine.systemUUID,
      bootID: i.machine.bootID,
      kernelVersion: i.machine.kernelVersion,
      osImage: i.machine.osImage,
      containerRuntimeVersion: i.runtimeVersion,
      kubeletVersion: s.kubeletVersion,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: i.machine.architecture,
      // NodeSwap: the node's swap, when it has any.
      ...(i.machine.swapBytes ? { swap: { capacity: i.machine.swapBytes } } : {}),
    },
    images: nodeImages(i.images, s.maxImages ?? 50),
    ...(i.runtimeHandlers?.length ? { runtimeHandlers: i.runtimeHandlers } : {}),
    ...(i.features ? { features: i.features } : {}),
    ...(s.declaredFeatures ? { declaredFeatures: s.declaredFeatures } : {}),
    volumesInUse: i.volumesInUse?.length ? i.volumesInUse : undefined,
  };
}

/** Upstream's cap on the names listed per image in the node status. */
const MAX_NAMES_PER_IMAGE = 5;

/**
 * The node status images (upstream Images setter): largest first, at most `maxImages` (-1: all), 5 names each. Images
 * of one size in upstream's order (ByImageSize: the greater id first), not the runtime's, which can change from one
 * listing to the next (containerd's comes from a map): else the status would differ at every pass and be reported.
 */
export function nodeImages(
  images: NodeStatusInput['images'],
  maxImages: number,
): { names: string[]; sizeBytes: number }[] {
  const sorted = [...images].sort((a, b) =>
    a.sizeBytes === b.sizeBytes ? (a.id === b.id ? 0 : a.id > b.id ? -1 : 1) : b.sizeBytes - a.sizeBytes,
  );
  return (maxImages > -1 ? sorted.slice(0, maxImages) : sorted).map((i) => ({
    names: i.names.slice(0, MAX_NAMES_PER_IMAGE),
    sizeBytes: i.sizeBytes,
  }));
}

/** The status without heartbeat times, for "did anything change" (upstream nodeStatusHasChanged). */
export function withoutHeartbeats(status: Obj): Obj {
  const conds = (status.conditions as NodeCondition[] | undefined)?.map(({ lastHeartbeatTime: _h, ...c }) => c);
  return { ...status, conditions: conds };
}
