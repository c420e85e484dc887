/**
 * The memory manager's state, as upstream's memorymanager/state package keeps it: for each NUMA
 * node a table per memory type (`memory`, `hugepages-<size>`) of its total, what is reserved for
 * the system, what pods may have, what they hold and what is free, with how many assignments use
 * the node and the group of nodes it is allocated with (`cells`); for each container of a
 * Guaranteed pod its memory blocks. The machine's state at start comes from its NUMA nodes and the
 * configured `reservedMemory` (getDefaultMachineState); a state read back from the checkpoint is
 * checked against it with the assignments replayed (validateState). Pure.
 */
import { hugePageResourceName } from '../../api/quantity.js';
import type { NumaNodeMemory } from './memory-topology.js';

/** One memory type on one NUMA node, in bytes (upstream state.MemoryTable). */
export interface MemoryTable {
  total: number;
  systemReserved: number;
  allocatable: number;
  reserved: number;
  free: number;
}

/** One NUMA node (upstream state.NUMANodeState); `cells` is null only when a checkpoint says so. */
export interface NumaNodeState {
  numberOfAssignments: number;
  memoryMap: Map<string, MemoryTable>;
  cells: number[] | null;
}

/** NUMA node ID → its state (upstream state.NUMANodeMap). */
export type MachineState = Map<number, NumaNodeState>;

/** Memory of one type given to a container on a set of NUMA nodes (upstream state.Block). */
export interface MemoryBlock {
  numaAffinity: number[] | null;
  type: string;
  size: number;
}

/** Pod UID → container name → its blocks (upstream state.ContainerMemoryAssignments). */
export type MemoryAssignments = Map<string, Map<string, MemoryBlock[] | null>>;

/** NUMA node ID → memory type → bytes reserved for the system (upstream systemReservedMemory). */
export type SystemReservedMemory = ReadonlyMap<number, ReadonlyMap<string, number>>;

export const cloneMachineState = (state: MachineState): MachineState =>
  new Map(
    [...state].map(([id, node]) => [
      id,
      {
        numberOfAssignments: node.numberOfAssignments,
        memoryMap: new Map([...node.memoryMap].map(([type, table]) => [type, { ...table }])),
        cells: node.cells ? [...node.cells] : null,
      },
    ]),
  );

export const cloneAssignments = (assignments: MemoryAssignments): MemoryAssignments =>
  new Map(
    [...assignments].map(([pod, containers]) => [
      pod,
      new Map(
        [...containers].map(([name, blocks]) => [
          name,
          blocks ? blocks.map((b) => ({ ...b, numaAffinity: b.numaAffinity ? [...b.numaAffinity] : null })) : null,
        ]),
      ),
    ]),
  );

/**
 * The machine's state with nothing assigned (upstream getDefaultMachineState): each node's huge
 * page pools and its memory less what is reserved and what its huge pages hold.
 */
export function defaultMachineState(nodes: readonly NumaNodeMemory[], reserved: SystemReservedMemory): MachineState {
  const state: MachineState = new Map();
  const reservedOf = (id: number, type: string) => reserved.get(id)?.get(type) ?? 0;
  for (const node of nodes) {
    const memoryMap = new Map<string, MemoryTable>();
    let hugePageBytes = 0;
    for (const pool of node.hugePages) {
      const type = hugePageResourceName(pool.pageSizeKb);
      const total = pool.pages * pool.pageSizeKb * 1024;
      const systemReserved = reservedOf(node.id, type);
      const allocatable = Math.max(0, total - systemReserved);
      memoryMap.set(type, { total, systemReserved, allocatable, reserved: 0, free: allocatable });
      hugePageBytes += total;
    }
    const systemReserved = reservedOf(node.id, 'memory');
    const allocatable = Math.max(0, node.memoryBytes - systemReserved - hugePageBytes);
    memoryMap.set('memory', { total: node.memoryBytes, systemReserved, allocatable, reserved: 0, free: allocatable });
    state.set(node.id, { numberOfAssignments: 0, memoryMap, cells: [node.id] });
  }
  return state;
}

/**
 * Takes `size` bytes of `type` from the nodes of `affinity` in order, each giving what it has free
 * until the request is met (upstream updateMachineState), and counts one assignment on each node.
 */
export function reserveOnNodes(state: MachineState, affinity: readonly number[], type: string, size: number): void {
  let left = size;
  for (const id of affinity) {
    const node = state.get(id)!;
    node.numberOfAssignments++;
    node.cells = [...affinity];
    if (left === 0) continue;
    const table = node.memoryMap.get(type);
    if (!table || table.free <= 0) continue;
    const taken = Math.min(table.free, left);
    table.reserved += taken;
    table.free -= taken;
    left -= taken;
  }
}

/** Gives back `size` bytes of `type` to the nodes of `affinity` (upstream RemoveContainer's loop). */
export function releaseOnNodes(state: MachineState, affinity: readonly number[], type: string, size: number): void {
  let left = size;
  for (const id of affinity) {
    const node = state.get(id);
    if (!node) continue;
    node.numberOfAssignments--;
    // A node no assignment uses any more is no longer in a group.
    if (node.numberOfAssignments === 0) node.cells = [id];
    if (left === 0) continue;
    const table = node.memoryMap.get(type);
    if (!table || table.reserved === 0) continue;
    const given = Math.min(table.reserved, left);
    table.free += given;
    table.reserved -= given;
    left -= given;
  }
}

const sameGroup = (a: readonly number[] | null, b: readonly number[] | null) => {
  const x = [...(a ?? [])].sort((p, q) => p - q);
  const y = [...(b ?? [])].sort((p, q) => p - q);
  return x.length === y.length && x.every((n, i) => n === y[i]);
};

/**
 * Upstream areMachineStatesEqual: the same nodes, assignments, groups and tables, free and
 * reserved summed per group.
 */
function machineStatesEqual(a: MachineState, b: MachineState): boolean {
  if (a.size !== b.size) return false;
  for (const [id, nodeA] of a) {
    const nodeB = b.get(id);
    if (!nodeB || nodeA.numberOfAssignments !== nodeB.numberOfAssignments) return false;
    if (!sameGroup(nodeA.cells, nodeB.cells) || nodeA.memoryMap.size !== nodeB.memoryMap.size) return false;
    for (const [type, tableA] of nodeA.memoryMap) {
      const tableB = nodeB.memoryMap.get(type);
      if (!tableB) return false;
      if (tableA.total !== tableB.total || tableA.systemReserved !== tableB.systemReserved) return false;
      if (tableA.allocatable !== tableB.allocatable) return false;
      // Within a group, which node holds the bytes does not matter: only the group's sums.
      const sum = (state: MachineState, field: 'free' | 'reserved') =>
        (nodeA.cells ?? []).reduce((total, cell) => total + (state.get(cell)?.memoryMap.get(type)?.[field] ?? 0), 0);
      if (sum(a, 'free') !== sum(b, 'free') || sum(a, 'reserved') !== sum(b, 'reserved')) return false;
    }
  }
  return true;
}

/**
 * Upstream validateState: the state read back must be what replaying its assignments on the
 * machine's default state gives (a changed reservation, a node or a memory bank added or gone
 * stops the start). An empty machine state is the default one; returns the state to use.
 */
export function validateMachineState(
  saved: MachineState,
  assignments: MemoryAssignments,
  defaults: MachineState,
): MachineState {
  if (!saved.size) {
    if (assignments.size)
      throw new Error('[memorymanager] machine state can not be empty when it has memory assignments');
    return defaults;
  }
  const expected = cloneMachineState(defaults);
  for (const [pod, containers] of assignments) {
    for (const [container, blocks] of containers) {
      for (const block of blocks ?? []) {
        const affinity = block.numaAffinity ?? [];
        const fault = (what: string) =>
          new Error(`[memorymanager] (pod: ${pod}, container: ${container}) the memory assignment uses ${what}`);
        for (const id of affinity) {
          if (!expected.has(id)) throw fault('the NUMA that does not exist');
          if (!expected.get(id)!.memoryMap.has(block.type)) throw fault('memory resource that does not exist');
        }
        reserveOnNodes(expected, affinity, block.type, block.size);
      }
    }
  }
  if (!machineStatesEqual(saved, expected))
    throw new Error('[memorymanager] the expected machine state is different from the real one');
  return saved;
}
