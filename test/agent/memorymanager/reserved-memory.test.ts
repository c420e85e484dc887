/**
 * `reservedMemory` / `--reserved-memory` as upstream checks them: the configuration's rules, the
 * flag's syntax, and the start's rule that each memory type's reservations add up to what Node
 * Allocatable keeps of it (kube-reserved + system-reserved + the hard eviction threshold), with
 * upstream's messages.
 */
import { describe, expect, it } from 'vitest';
import {
  parseReservedMemoryFlag,
  reservedMemoryErrors,
  systemReservedMemory,
  type AllocatableReservationInput,
} from '../../../src/agent/memorymanager/reserved-memory.js';
import { parseFlags } from '../../../src/config/flags.js';

const nodes = [
  { id: 0, memoryBytes: 2 ** 32, hugePages: [] },
  { id: 1, memoryBytes: 2 ** 32, hugePages: [] },
];
const allocatable = (o: Partial<AllocatableReservationInput> = {}): AllocatableReservationInput => ({
  kubeReserved: {},
  systemReserved: {},
  memoryEvictionThreshold: '100Mi',
  memoryCapacityBytes: 2 ** 33,
  hugePageTypes: ['hugepages-2Mi', 'hugepages-1Gi'],
  ...o,
});

describe('reservedMemory', () => {
  it("reports every broken rule in upstream's words", () => {
    expect(
      reservedMemoryErrors([
        { numaNode: 0, limits: { memory: '1Gi', cpu: '1' } },
        { numaNode: 0, limits: { memory: '0' } },
      ]),
    ).toEqual([
      'invalid configuration: the limit type "cpu" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted',
      'invalid configuration: reserved memory may not be zero for NUMA node 0 and resource "memory"',
      'invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"',
    ]);
    expect(reservedMemoryErrors([{ numaNode: 1, limits: { memory: '1Gi', 'hugepages-2Mi': '2Mi' } }])).toEqual([]);
  });

  it('parses the flag as upstream: nodes split by ";", types by ","; repeated flags add up', () => {
    expect(parseReservedMemoryFlag('0:memory=1Gi,hugepages-2Mi=2Mi;1:memory=512Mi')).toEqual([
      { numaNode: 0, limits: { memory: '1Gi', 'hugepages-2Mi': '2Mi' } },
      { numaNode: 1, limits: { memory: '512Mi' } },
    ]);
    expect(() => parseReservedMemoryFlag('memory=1Gi')).toThrow(
      'the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got memory=1Gi',
    );
    expect(() => parseReservedMemoryFlag('x:memory=1Gi')).toThrow(
      'failed to convert the NUMA node ID, exptected integer, got x',
    );
    expect(() => parseReservedMemoryFlag('0:cpu=1')).toThrow('memory type conversion error, unknown type: "cpu"');
    expect(() => parseReservedMemoryFlag('0:memory=lots')).toThrow(
      'failed to parse the quantatity, expected quantatity, got lots',
    );
    const flags = parseFlags(['--reserved-memory', '0:memory=50Mi', '--reserved-memory=1:memory=50Mi']);
    expect(flags.config.reservedMemory).toEqual([
      { numaNode: 0, limits: { memory: '50Mi' } },
      { numaNode: 1, limits: { memory: '50Mi' } },
    ]);
    expect(() => parseFlags(['--reserved-memory', '0memory'])).toThrow(
      /invalid argument "0memory" for "--reserved-memory"/,
    );
  });

  it('must add up to what Node Allocatable keeps of each type', () => {
    const reserved = systemReservedMemory(
      [
        { numaNode: 0, limits: { memory: '300Mi' } },
        { numaNode: 1, limits: { memory: '300Mi' } },
      ],
      nodes,
      allocatable({ kubeReserved: { memory: '250Mi' }, systemReserved: { memory: '250Mi' } }),
    );
    expect(reserved).toEqual(
      new Map([
        [0, new Map([['memory', 300 * 2 ** 20]])],
        [1, new Map([['memory', 300 * 2 ** 20]])],
      ]),
    );
    expect(() => systemReservedMemory([{ numaNode: 0, limits: { memory: '1Gi' } }], nodes, allocatable())).toThrow(
      'the total amount "1Gi" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature',
    );
    expect(() => systemReservedMemory([], nodes, allocatable())).toThrow(
      'the total amount "0" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature',
    );
    // A percentage threshold counts against the node's capacity (10 % of 8 GiB), in bytes.
    expect(() =>
      systemReservedMemory(
        [{ numaNode: 0, limits: { memory: '1G' } }],
        nodes,
        allocatable({ memoryEvictionThreshold: '10%' }),
      ),
    ).toThrow(
      'the total amount "1G" of type "memory" is not equal to the value "858993472" determined by Node Allocatable feature',
    );
    expect(() =>
      systemReservedMemory(
        [{ numaNode: 0, limits: { memory: '100Mi', 'hugepages-2Mi': '4Mi' } }],
        nodes,
        allocatable(),
      ),
    ).toThrow(
      'the total amount "4Mi" of type "hugepages-2Mi" is not equal to the value "0" determined by Node Allocatable feature',
    );
    expect(() => systemReservedMemory([{ numaNode: 2, limits: { memory: '100Mi' } }], nodes, allocatable())).toThrow(
      'the reserved memory configuration references a NUMA node 2 that does not exist on this machine',
    );
  });
});
