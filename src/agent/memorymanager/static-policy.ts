/**
 * The decisions of upstream's Static memory manager policy (memorymanager/policy_static.go), as
 * pure functions over the machine state: what a container or a pod of a Guaranteed pod asks for
 * (memory and each huge page size), the NUMA node sets that can hold it as topology hints, the
 * best of them, and the rules that keep a NUMA node in one kind of allocation (a node used for a
 * single-node allocation is never part of a multi-node group, and a group is never mixed with
 * another). The manager (memory-manager.ts) applies them to its state.
 */
import { bytes, isHugePageResource, parseQuantity } from '../../api/quantity.js';
import type { Container, Pod } from '../../api/types.js';
import { numaMasks, narrower, type TopologyHint } from '../topologymanager/hint-merge.js';
import type { MachineState } from './machine-state.js';
import { isRestartableInitContainer, isSidecar } from '../runtime/compute-pod-actions.js';

/** Memory type (`memory`, `hugepages-<size>`) → bytes. */
export type MemoryRequest = Map<string, number>;

/** Memory type → its hints; an empty map: no preference. */
export type MemoryHints = Map<string, TopologyHint[]>;

const isMemoryType = (name: string) => name === 'memory' || isHugePageResource(name);

/** A regular (run-to-completion) init container of `pod` (upstream isRegularInitContainer). */
export const isRegularInitContainer = (pod: Pod, c: Container): boolean =>
  (pod.spec.initContainers ?? []).some((x) => x.name === c.name && !isSidecar(x));

/**
 * The memory a container asks for (upstream getRequestedResources): its requests, or what was
 * allocated to it when its status says (in-place resize keeps what the kubelet agreed to), of
 * memory and huge pages. Throws upstream's error for a quantity that is not a whole number of bytes.
 */
export function containerMemoryRequest(pod: Pod, c: Container): MemoryRequest {
  const statuses = [
    ...(pod.status?.containerStatuses ?? []),
    ...(isRestartableInitContainer(pod, c) ? (pod.status?.initContainerStatuses ?? []) : []),
  ];
  const allocated = statuses.find((s) => s.name === c.name)?.allocatedResources;
  const requests: Record<string, string> = allocated ?? {
    ...c.resources?.limits,
    ...c.resources?.requests,
  };
  const request: MemoryRequest = new Map();
  for (const [name, quantity] of Object.entries(requests)) {
    if (!isMemoryType(name)) continue;
    const value = parseQuantity(quantity);
    if (value === undefined || !Number.isSafeInteger(value))
      throw new Error('[memorymanager] failed to represent quantity as int64');
    request.set(name, bytes(quantity)!);
  }
  return request;
}

/**
 * The memory a pod asks for at once (upstream getPodRequestedResources): its containers' sum with
 * the restartable init containers', or the most a regular init container needs beside the
 * restartable ones started before it, whichever is larger.
 */
export function podMemoryRequest(pod: Pod): MemoryRequest {
  const initPeak: MemoryRequest = new Map();
  const sidecars: MemoryRequest = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    for (const [name, size] of containerMemoryRequest(pod, c)) {
      if (isSidecar(c)) sidecars.set(name, (sidecars.get(name) ?? 0) + size);
      else initPeak.set(name, Math.max(initPeak.get(name) ?? 0, (sidecars.get(name) ?? 0) + size));
    }
  }
  const app: MemoryRequest = new Map();
  for (const c of pod.spec.containers)
    for (const [name, size] of containerMemoryRequest(pod, c)) app.set(name, (app.get(name) ?? 0) + size);
  const request: MemoryRequest = new Map();
  for (const [name, size] of app)
    request.set(name, Math.max(size + (sidecars.get(name) ?? 0), initPeak.get(name) ?? 0));
  return request;
}

/** A set of NUMA nodes as a key (upstream bitmask.String). */
export const maskKey = (nodes: readonly number[]): string => [...nodes].sort((a, b) => a - b).join(',');

const sortedEqual = (a: readonly number[], b: readonly number[]) => maskKey(a) === maskKey(b);

/** What the nodes of `mask` have together of memory `type`: free, or allocatable. */
function maskTotal(state: MachineState, mask: readonly number[], type: string, field: 'free' | 'allocatable'): number {
  return mask.reduce((total, id) => total + (state.get(id)?.memoryMap.get(type)?.[field] ?? 0), 0);
}

/**
 * Every NUMA node set that can hold `request` now (upstream calculateHints), each memory type with
 * the same list, preferred when as small as the smallest set with enough allocatable memory.
 * `reusable(mask, type)` is what the pod's init containers hold there and may be reused.
 */
export function memoryHints(
  state: MachineState,
  request: MemoryRequest,
  reusable: (mask: readonly number[], type: string) => number = () => 0,
): MemoryHints {
  const nodes = [...state.keys()].sort((a, b) => a - b);
  let minAffinitySize = nodes.length;
  const found: number[][] = [];
  for (const mask of numaMasks(nodes)) {
    if ([...request].some(([type, size]) => maskTotal(state, mask, type, 'allocatable') < size)) continue;
    minAffinitySize = Math.min(minAffinitySize, mask.length);
    // A node grouped with others cannot take a single-node allocation.
    if (mask.length === 1 && (state.get(mask[0])!.cells?.length ?? 0) > 1) continue;
    // A node already in use can only be part of the same group again.
    if (violatesNumaAllocations(state, mask)) continue;
    if ([...request].some(([type, size]) => maskTotal(state, mask, type, 'free') + reusable(mask, type) < size))
      continue;
    found.push(mask);
  }
  const hints: MemoryHints = new Map();
  if (!found.length) return hints;
  for (const type of request.keys())
    hints.set(
      type,
      found.map((mask) => ({ numaNodes: mask, preferred: mask.length === minAffinitySize })),
    );
  return hints;
}

/**
 * The best of `hints` (upstream findBestHint): a preferred hint over an unpreferred one, then
 * the narrower; undefined when there is none.
 */
export function bestHint(hints: readonly TopologyHint[]): TopologyHint | undefined {
  let best: TopologyHint | undefined;
  for (const hint of hints) {
    if (!best?.numaNodes) best = hint;
    else if (hint.preferred && !best.preferred) best = hint;
    else if (hint.preferred === best.preferred && hint.numaNodes && narrower(hint.numaNodes, best.numaNodes))
      best = hint;
  }
  return best;
}

/** The nodes of `mask` have as much of each type free as `request` asks (upstream isAffinitySatisfyRequest). */
export function maskSatisfies(state: MachineState, mask: readonly number[], request: MemoryRequest): boolean {
  return [...request].every(([type, size]) => maskTotal(state, mask, type, 'free') >= size);
}

/** Every node of `hint` is in `group` (upstream isHintInGroup). */
export const isHintInGroup = (hint: readonly number[], group: readonly number[]): boolean =>
  hint.every((id) => group.includes(id));

/**
 * `mask` would break the rule that a NUMA node serves single-node or multi-node allocations of one
 * group only (upstream isAffinityViolatingNUMAAllocations).
 */
export function violatesNumaAllocations(state: MachineState, mask: readonly number[]): boolean {
  if (mask.length === 1) return false;
  return mask.some((id) => {
    // A node the machine state lacks (no memory of its own) cannot take part in an allocation.
    const node = state.get(id);
    if (!node) return true;
    if (node.numberOfAssignments === 0) return false;
    return (node.cells?.length ?? 0) === 1 || !sortedEqual(node.cells ?? [], mask);
  });
}
