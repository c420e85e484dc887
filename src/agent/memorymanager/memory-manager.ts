/**
 * The memory manager (upstream pkg/kubelet/cm/memorymanager), a hint provider and allocator of the
 * topology manager's admission (topologymanager/topology-admission.ts) after the device and CPU
 * managers. With the `Static` policy each container of a Guaranteed pod gets its memory and huge
 * pages on a set of NUMA nodes at admission — the topology manager's choice, extended to nodes
 * that can hold the request, else the narrowest set that can — and is created with those nodes as
 * its cpuset.mems. Memory of a pod's run-to-completion init containers is reused by the
 * containers after them. The state is upstream's checkpoint (checkpoint.ts), checked at start
 * against the machine and the configured reservations; assignments of pods no longer active are
 * released at the next admission. With `None` it only keeps its state file.
 */
import type { Container, Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import { unexpectedAdmissionError, type AllocationRefusal } from '../admission/allocation-refusal.js';
import { hasPodLevelResources } from '../status/generate-pod-status.js';
import { qosClass } from '../status/qos-class.js';
import { isSidecar } from '../runtime/compute-pod-actions.js';
import type { ResourceHints, TopologyHint } from '../topologymanager/hint-merge.js';
import { restoreMemoryManagerState, writeMemoryCheckpoint, type MemoryManagerPolicy } from './checkpoint.js';
import {
  cloneMachineState,
  defaultMachineState,
  releaseOnNodes,
  reserveOnNodes,
  validateMachineState,
  type MachineState,
  type MemoryAssignments,
  type MemoryBlock,
  type SystemReservedMemory,
} from './machine-state.js';
import type { NumaNodeMemory } from './memory-topology.js';
import {
  bestHint,
  containerMemoryRequest,
  isHintInGroup,
  isRegularInitContainer,
  maskKey,
  maskSatisfies,
  memoryHints,
  podMemoryRequest,
  violatesNumaAllocations,
  type MemoryHints,
  type MemoryRequest,
} from './static-policy.js';

export interface MemoryManagerConfig {
  policy: MemoryManagerPolicy;
  /** `<root-dir>/memory_manager_state`. */
  stateFile: string;
  /** The machine's NUMA nodes and their memory (memory-topology.ts). */
  nodes: readonly NumaNodeMemory[];
  /** `reservedMemory` by NUMA node and memory type (reserved-memory.ts). */
  reserved: SystemReservedMemory;
  logger?: Logger;
}

/** Pinning requests and failures, for upstream's kubelet_memory_manager_pinning_* counters. */
export interface MemoryManagerCounts {
  pinningRequests: number;
  pinningErrors: number;
}

/** The memory manager's view for container creation, the pod-resources API and the metrics. */
export interface PodMemory {
  /** A container's cpuset.mems (`0,1`), undefined without pinned memory. */
  cpusetMems(podUid: string, name: string): string | undefined;
  memoryOf(podUid: string, name: string): readonly MemoryBlock[];
  allocatableMemory(): readonly MemoryBlock[];
  counts(): MemoryManagerCounts;
}

/** `hints` as the topology manager's per-resource lists; none (no preference) when empty. */
const asResourceHints = (hints: MemoryHints): ResourceHints[] => [...hints.values()];

/**
 * The hints of a container that already has `blocks` (upstream regenerateHints: after a kubelet
 * restart, say): its blocks' nodes, preferred; no preference when they do not match the request.
 */
function hintsOfBlocks(request: MemoryRequest, blocks: readonly MemoryBlock[]): ResourceHints[] {
  if (blocks.length !== request.size) return [];
  const hints = new Map<string, TopologyHint[]>([...request.keys()].map((type) => [type, []]));
  for (const block of blocks) {
    if (request.get(block.type) !== block.size) return [];
    const numaNodes = [...(block.numaAffinity ?? [])].sort((a, b) => a - b);
    hints.get(block.type)!.push({ numaNodes, preferred: true });
  }
  return [...hints.values()];
}

export class MemoryManager {
  private machineState: MachineState = new Map();
  private assignments: MemoryAssignments = new Map();
  /** Pod UID → NUMA node set → memory type → the bytes its regular init containers hold for later containers. */
  private readonly reusable = new Map<string, Map<string, Map<string, number>>>();
  /** Pods seen active since the start: only theirs are released before every pod source has delivered its pods. */
  private readonly seen = new Set<string>();
  private allocatable: MemoryBlock[] = [];
  private pinningRequests = 0;
  private pinningErrors = 0;

  constructor(private readonly config: MemoryManagerConfig) {}

  /**
   * Restores the state file, or writes it (upstream Start): with `Static`, the state must be what
   * its assignments give on this machine with these reservations, else the start stops.
   */
  start(): void {
    const { policy, stateFile, nodes, reserved } = this.config;
    const checkpoint = restoreMemoryManagerState(stateFile, policy);
    if (policy !== 'Static') return;
    this.assignments = checkpoint.entries;
    const defaults = defaultMachineState(nodes, reserved);
    const wasEmpty = checkpoint.machineState.size === 0;
    this.machineState = validateMachineState(checkpoint.machineState, checkpoint.entries, defaults);
    if (wasEmpty) this.save();
    this.allocatable = [...this.machineState].flatMap(([id, node]) =>
      [...node.memoryMap]
        .filter(([, table]) => table.allocatable > 0)
        .map(([type, table]) => ({ numaAffinity: [id], type, size: table.allocatable })),
    );
  }

  private save(): void {
    writeMemoryCheckpoint(this.config.stateFile, {
      policyName: this.config.policy,
      machineState: this.machineState,
      entries: this.assignments,
    });
  }

  private isPinned(pod: Pod): boolean {
    // A pod with pod-level resources is left alone, as upstream's Static policy leaves it.
    return this.config.policy === 'Static' && qosClass(pod) === 'Guaranteed' && !hasPodLevelResources(pod.spec);
  }

  /**
   * The start of a pod's admission (upstream removeStaleState before hints and allocation): the
   * assignments of containers no longer in an active pod are released — once every pod source has
   * delivered its pods (`sourcesSeen`); before, only those of pods seen active since the start.
   */
  beginAdmission(pod: Pod, active: readonly Pod[], sourcesSeen: boolean): void {
    if (this.config.policy !== 'Static') return;
    const containers = new Map<string, Set<string>>();
    for (const p of [...active, pod])
      containers.set(
        p.metadata.uid!,
        new Set([...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.name)),
      );
    for (const uid of containers.keys()) this.seen.add(uid);
    let changed = false;
    for (const [uid, byName] of [...this.assignments]) {
      if (!sourcesSeen && !this.seen.has(uid)) continue;
      for (const name of [...byName.keys()]) {
        if (containers.get(uid)?.has(name)) continue;
        this.config.logger?.info({ podUID: uid, containerName: name }, 'RemoveStaleState removing state');
        changed = this.release(uid, name) || changed;
      }
    }
    // Bounded: only pods still active or still holding memory stay noted as seen.
    for (const uid of this.seen) if (!containers.has(uid) && !this.assignments.has(uid)) this.seen.delete(uid);
    if (changed) this.save();
  }

  /** Gives a container's memory back (upstream staticPolicy.RemoveContainer); false when it had none. */
  private release(uid: string, name: string): boolean {
    const byName = this.assignments.get(uid);
    const blocks = byName?.get(name);
    if (!byName || blocks === undefined) return false;
    byName.delete(name);
    if (!byName.size) this.assignments.delete(uid);
    for (const block of blocks ?? [])
      releaseOnNodes(this.machineState, block.numaAffinity ?? [], block.type, block.size);
    return true;
  }

  private reusableOf(uid: string) {
    return (mask: readonly number[], type: string) => this.reusable.get(uid)?.get(maskKey(mask))?.get(type) ?? 0;
  }

  /** A container's hints, one list per memory type (upstream GetTopologyHints); none without a preference. */
  containerHints(pod: Pod, c: Container): ResourceHints[] {
    if (!this.isPinned(pod)) return [];
    let request: MemoryRequest;
    try {
      request = containerMemoryRequest(pod, c);
    } catch {
      return [];
    }
    const blocks = this.assignments.get(pod.metadata.uid!)?.get(c.name);
    if (blocks) return hintsOfBlocks(request, blocks);
    return asResourceHints(memoryHints(this.machineState, request, this.reusableOf(pod.metadata.uid!)));
  }

  /** The pod's hints with the pod scope (upstream GetPodTopologyHints). */
  podHints(pod: Pod): ResourceHints[] {
    if (!this.isPinned(pod)) return [];
    let request: MemoryRequest;
    try {
      request = podMemoryRequest(pod);
    } catch {
      return [];
    }
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const blocks = this.assignments.get(pod.metadata.uid!)?.get(c.name);
      if (blocks) return hintsOfBlocks(request, blocks);
    }
    return asResourceHints(memoryHints(this.machineState, request, this.reusableOf(pod.metadata.uid!)));
  }

  /**
   * One container's memory (upstream staticPolicy.Allocate) on the topology manager's `hint`
   * (undefined with the `none` policy); the refusal, or undefined.
   */
  allocateContainer(pod: Pod, c: Container, hint?: TopologyHint): AllocationRefusal | undefined {
    if (!this.isPinned(pod)) return undefined;
    this.pinningRequests++;
    const failure = this.allocate(pod, c, hint ?? { preferred: false });
    if (!failure) return undefined;
    this.pinningErrors++;
    this.config.logger?.error(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, containerName: c.name, err: failure },
      'Allocate error',
    );
    return unexpectedAdmissionError(failure);
  }

  /** The reason the allocation failed, or undefined once the container has its blocks. */
  private allocate(pod: Pod, c: Container, hint: TopologyHint): string | undefined {
    const uid = pod.metadata.uid!;
    const existing = this.assignments.get(uid)?.get(c.name);
    // A container in the state (null blocks included, as upstream's copy of a nil list) keeps what it has.
    if (existing !== undefined) {
      this.noteReusable(pod, c, existing ?? []);
      return undefined;
    }
    let request: MemoryRequest;
    try {
      request = containerMemoryRequest(pod, c);
    } catch (err) {
      return (err as Error).message;
    }
    const state = cloneMachineState(this.machineState);
    const reusable = this.reusableOf(uid);
    let best = hint;
    // No NUMA affinity from the topology manager: the best set as its own hints would rank them.
    if (!best.numaNodes) {
      const hints = memoryHints(state, request, reusable);
      const fallback = hints.size ? bestHint(hints.get('memory') ?? [...hints.values()][0]) : undefined;
      if (!fallback)
        return '[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available';
      if (!fallback.preferred && best.preferred) return '[memorymanager] failed to find the default preferred hint';
      best = fallback;
    }
    // A set that cannot hold the request (the merge ANDs the providers' sets) grows to one that can.
    if (!maskSatisfies(state, best.numaNodes!, request)) {
      const hints = memoryHints(state, request, reusable);
      const wider = (hints.get('memory') ?? []).filter((h) => isHintInGroup(best.numaNodes!, h.numaNodes!));
      const extended = bestHint(wider);
      if (!extended) return '[memorymanager] failed to find NUMA nodes to extend the current topology hint';
      if (!extended.preferred && best.preferred) return '[memorymanager] failed to find the extended preferred hint';
      best = extended;
    }
    const mask = [...best.numaNodes!].sort((a, b) => a - b);
    if (violatesNumaAllocations(state, mask)) return '[memorymanager] preferred hint violates NUMA node allocation';
    const blocks: MemoryBlock[] = [];
    for (const [type, size] of request) {
      blocks.push({ numaAffinity: mask, type, size });
      const reused = reusable(mask, type);
      reserveOnNodes(state, mask, type, reused >= size ? 0 : size - reused);
    }
    this.noteReusable(pod, c, blocks);
    this.machineState = state;
    if (!this.assignments.has(uid)) this.assignments.set(uid, new Map());
    this.assignments.get(uid)!.set(c.name, blocks);
    this.shrinkInitContainerBlocks(pod, c, blocks);
    this.save();
    return undefined;
  }

  /**
   * Upstream updatePodReusableMemory: a regular init container's blocks become reusable by the
   * containers after it (the largest per node set and type); an app container's use it up.
   */
  private noteReusable(pod: Pod, c: Container, blocks: readonly MemoryBlock[]): void {
    const uid = pod.metadata.uid!;
    for (const other of this.reusable.keys()) if (other !== uid) this.reusable.delete(other);
    if (isRegularInitContainer(pod, c)) {
      const byMask = this.reusable.get(uid) ?? new Map<string, Map<string, number>>();
      this.reusable.set(uid, byMask);
      for (const block of blocks) {
        const key = maskKey(block.numaAffinity ?? []);
        const byType = byMask.get(key) ?? new Map<string, number>();
        byMask.set(key, byType);
        if (block.size > (byType.get(block.type) ?? 0)) byType.set(block.type, block.size);
      }
      return;
    }
    for (const block of blocks) {
      const byType = this.reusable.get(uid)?.get(maskKey(block.numaAffinity ?? []));
      const reusable = byType?.get(block.type) ?? 0;
      if (reusable) byType!.set(block.type, block.size >= reusable ? 0 : reusable - block.size);
    }
  }

  /**
   * Upstream updateInitContainersMemoryBlocks: the init containers before `c` whose memory `c`
   * reused show that much less, so a pod's blocks add up to what it holds.
   */
  private shrinkInitContainerBlocks(pod: Pod, c: Container, blocks: readonly MemoryBlock[]): void {
    const byName = this.assignments.get(pod.metadata.uid!);
    for (const block of blocks) {
      let left = block.size;
      for (const init of pod.spec.initContainers ?? []) {
        if (init.name === c.name || left === 0) break;
        if (isSidecar(init)) continue;
        for (const initBlock of byName?.get(init.name) ?? []) {
          if (initBlock.size === 0 || initBlock.type !== block.type) continue;
          if (maskKey(initBlock.numaAffinity ?? []) !== maskKey(block.numaAffinity ?? [])) continue;
          const taken = Math.min(initBlock.size, left);
          initBlock.size -= taken;
          left -= taken;
        }
      }
    }
  }

  /** The NUMA nodes of a container's memory, ascending (upstream GetMemoryNUMANodes); undefined without any. */
  numaNodesOf(podUid: string, name: string): number[] | undefined {
    const nodes = new Set((this.assignments.get(podUid)?.get(name) ?? []).flatMap((b) => b.numaAffinity ?? []));
    return nodes.size ? [...nodes].sort((a, b) => a - b) : undefined;
  }

  /** A container's memory blocks (upstream GetMemory), for the pod-resources API. */
  memoryOf(podUid: string, name: string): readonly MemoryBlock[] {
    return this.assignments.get(podUid)?.get(name) ?? [];
  }

  /** Each NUMA node's allocatable memory of each type, as at start (upstream GetAllocatableMemory). */
  allocatableMemory(): readonly MemoryBlock[] {
    return this.allocatable;
  }

  counts(): MemoryManagerCounts {
    return { pinningRequests: this.pinningRequests, pinningErrors: this.pinningErrors };
  }
}
