/**
 * `reservedMemory` (`--reserved-memory`): the memory and huge pages kept from pods on each NUMA
 * node for the Static memory manager policy, as upstream checks it — the configuration's rules
 * (validation_reserved_memory.go), the flag's syntax (cliflag.ReservedMemoryVar), and at start
 * the rule that each type's reservations add up to what Node Allocatable keeps of it:
 * kube-reserved + system-reserved + the hard eviction threshold (upstream validateReservedMemory).
 * Pure.
 */
import { bytes, formatQuantity, isHugePageResource, parseQuantity, quantityFormat } from '../../api/quantity.js';
import type { SystemReservedMemory } from './machine-state.js';
import type { NumaNodeMemory } from './memory-topology.js';
import { thresholdBytes } from '../eviction/signals.js';

/** One entry of `reservedMemory` (upstream MemoryReservation). */
export interface MemoryReservation {
  numaNode: number;
  limits: Record<string, string>;
}

const supported = (name: string) => name === 'memory' || isHugePageResource(name);

/** Upstream's validateReservedMemoryConfiguration: every broken rule, as its messages. */
export function reservedMemoryErrors(reservations: readonly MemoryReservation[]): string[] {
  const errors: string[] = [];
  const seen = new Map<number, Set<string>>();
  for (const { numaNode, limits } of reservations) {
    const types = seen.get(numaNode) ?? new Set<string>();
    seen.set(numaNode, types);
    for (const [name, quantity] of Object.entries(limits ?? {})) {
      if (!supported(name))
        errors.push(
          `invalid configuration: the limit type "${name}" for NUMA node ${numaNode} is not supported, ` +
            'only [memory hugepages-<HugePageSize>] is accepted',
        );
      if (parseQuantity(quantity) === 0)
        errors.push(
          `invalid configuration: reserved memory may not be zero for NUMA node ${numaNode} and resource "${name}"`,
        );
      if (types.has(name))
        errors.push(
          'invalid configuration: the reserved memory has a duplicate value ' +
            `for NUMA node ${numaNode} and resource "${name}"`,
        );
      types.add(name);
    }
  }
  return errors;
}

/**
 * One `--reserved-memory` value (`0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=2Gi`) as reservations;
 * throws upstream's message for a malformed one.
 */
export function parseReservedMemoryFlag(value: string): MemoryReservation[] {
  if (value === '') return [];
  return value.split(';').map((reservation) => {
    const parts = reservation.split(':');
    if (parts.length !== 2)
      throw new Error(
        'the reserved memory has incorrect format, ' +
          `expected numaNodeID:type=quantity[,type=quantity...], got ${reservation}`,
      );
    if (!/^[+-]?\d+$/.test(parts[0]))
      throw new Error(`failed to convert the NUMA node ID, exptected integer, got ${parts[0]}`);
    const limits: Record<string, string> = {};
    for (const limit of parts[1].split(',')) {
      const pair = limit.split('=');
      if (pair.length !== 2)
        throw new Error(`the reserved limit has incorrect value, expected type=quantatity, got ${limit}`);
      if (!supported(pair[0])) throw new Error(`memory type conversion error, unknown type: "${pair[0]}"`);
      if (parseQuantity(pair[1]) === undefined)
        throw new Error(`failed to parse the quantatity, expected quantatity, got ${pair[1]}`);
      limits[pair[0]] = pair[1];
    }
    return { numaNode: Number(parts[0]), limits };
  });
}

/** A quantity as Go sums it: the value, and the format of the first non-zero term (its String()). */
interface Sum {
  value: number;
  format: 'BinarySI' | 'DecimalSI';
}
const add = (sum: Sum, quantity: string | undefined): Sum => {
  const value = quantity === undefined ? 0 : (bytes(quantity) ?? 0);
  return sum.value === 0 && value !== 0
    ? { value, format: quantityFormat(quantity!) }
    : { ...sum, value: sum.value + value };
};
const text = (s: Sum) => formatQuantity(s.value, s.format);

/** What Node Allocatable keeps of each memory type (upstream GetNodeAllocatableReservation). */
export interface AllocatableReservationInput {
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  /** evictionHard's `memory.available`: a quantity or a percentage of the memory capacity. */
  memoryEvictionThreshold?: string;
  memoryCapacityBytes: number;
  /** The huge page resources of the node's capacity (`hugepages-2Mi`, …). */
  hugePageTypes: readonly string[];
}

function allocatableReservation(input: AllocatableReservationInput): Map<string, Sum> {
  const out = new Map<string, Sum>();
  for (const type of ['memory', ...input.hugePageTypes]) {
    let sum: Sum = { value: 0, format: 'DecimalSI' };
    sum = add(sum, input.systemReserved[type]);
    sum = add(sum, input.kubeReserved[type]);
    const threshold = type === 'memory' ? input.memoryEvictionThreshold : undefined;
    if (threshold?.trim().endsWith('%')) {
      // A percentage of the capacity, as a binary quantity.
      const value = thresholdBytes(threshold, input.memoryCapacityBytes);
      sum = sum.value === 0 && value ? { value, format: 'BinarySI' } : { ...sum, value: sum.value + value };
    } else sum = add(sum, threshold);
    if (sum.value) out.set(type, sum);
  }
  return out;
}

/**
 * `reservations` by NUMA node and type for the Static policy (upstream getSystemReservedMemory):
 * throws upstream's message when one names a node the machine lacks or when a type's reservations
 * do not add up to what Node Allocatable keeps of it.
 */
export function systemReservedMemory(
  reservations: readonly MemoryReservation[],
  nodes: readonly NumaNodeMemory[],
  allocatable: AllocatableReservationInput,
): SystemReservedMemory {
  const ids = new Set(nodes.map((n) => n.id));
  const totals = new Map<string, Sum>();
  for (const { numaNode, limits } of reservations) {
    if (!ids.has(numaNode))
      throw new Error(
        `the reserved memory configuration references a NUMA node ${numaNode} that does not exist on this machine`,
      );
    // Go adds the earlier total to this entry's quantity, so the sum keeps the last entry's format.
    for (const [type, quantity] of Object.entries(limits)) {
      const value = bytes(quantity) ?? 0;
      totals.set(type, { value: value + (totals.get(type)?.value ?? 0), format: quantityFormat(quantity) });
    }
  }
  const kept = allocatableReservation(allocatable);
  for (const type of new Set([...totals.keys(), ...kept.keys()])) {
    const reserved = totals.get(type) ?? { value: 0, format: 'DecimalSI' };
    const expected = kept.get(type) ?? { value: 0, format: 'DecimalSI' };
    if (reserved.value !== expected.value)
      throw new Error(
        `the total amount "${text(reserved)}" of type "${type}" ` +
          `is not equal to the value "${text(expected)}" determined by Node Allocatable feature`,
      );
  }
  const out = new Map<number, Map<string, number>>(nodes.map((n) => [n.id, new Map()]));
  for (const { numaNode, limits } of reservations)
    for (const [type, quantity] of Object.entries(limits)) out.get(numaNode)!.set(type, bytes(quantity) ?? 0);
  return out;
}
