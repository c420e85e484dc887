/**
 * Which CPUs an exclusive allocation takes, on upstream's test topologies and with its expected
 * results (cpu_assignment_test.go): packed (TestTakeByTopologyNUMAPacked) and, with
 * distribute-cpus-across-numa, spread evenly over NUMA nodes (TestTakeByTopologyNUMADistributed).
 */
import { describe, expect, it } from 'vitest';
import { formatCpuSet, parseCpuSet } from '../../../src/lib/cpuset.js';
import { takeByTopology } from '../../../src/agent/cpumanager/cpu-assignment.js';
import { takeDistributedAcrossNuma } from '../../../src/agent/cpumanager/cpu-distribution.js';
import type { CpuTopology } from '../../../src/agent/cpumanager/topology.js';

/** topoSingleSocketHT: 8 CPUs, 4 cores of 2 threads (i and i+4). */
const singleSocketHT: CpuTopology = new Map(
  Array.from({ length: 8 }, (_, i) => [i, { coreId: i % 4, socketId: 0, numaNodeId: 0 }]),
);
/** topoDualSocketHT: 12 CPUs, even ones on socket / NUMA node 0, cores (0,6) (2,8) (4,10) (1,7) (3,9) (5,11). */
const dualSocketHT: CpuTopology = new Map(
  Array.from({ length: 12 }, (_, i) => [i, { coreId: i % 6, socketId: i % 2, numaNodeId: i % 2 }]),
);
/**
 * topoDualSocketMultiNumaPerSocketHT (dual Xeon Gold 6230): 2 sockets of 2 NUMA nodes of 10 cores, i and i+40 siblings.
 */
const dualSocketMultiNumaHT: CpuTopology = new Map(
  Array.from({ length: 80 }, (_, i) => {
    const core = i % 40;
    return [i, { coreId: core, socketId: core < 20 ? 0 : 1, numaNodeId: Math.floor(core / 10) }];
  }),
);

const cpus = (text: string) => parseCpuSet(text);
const result = (r: ReturnType<typeof takeByTopology>) => (r.ok ? formatCpuSet(r.cpus) : r.message);

/** Upstream's commonTakeByTopologyTestCases: topology, available, request, result (or error). */
const common: [string, CpuTopology, string, number, string][] = [
  [
    'more CPUs than available',
    singleSocketHT,
    '0,2,4,6',
    5,
    'not enough cpus available to satisfy request: requested=5, available=4',
  ],
  ['none', singleSocketHT, '0-7', 0, ''],
  ['one', singleSocketHT, '0-7', 1, '0'],
  ['one, some taken', singleSocketHT, '1,3,5-7', 1, '6'],
  ['two', singleSocketHT, '0-7', 2, '0,4'],
  ['all', singleSocketHT, '0-7', 8, '0-7'],
  ['two, only one core wholly free', singleSocketHT, '0-3,6', 2, '2,6'],
  ['a socket', dualSocketHT, '0-11', 6, '0,2,4,6,8,10'],
  ['a socket of a multi-NUMA-per-socket machine', dualSocketMultiNumaHT, '0-79', 40, '0-19,40-59'],
  ['a NUMA node', dualSocketMultiNumaHT, '0-79', 20, '0-9,40-49'],
  ['a NUMA node, one taken', dualSocketMultiNumaHT, '10-39,50-79', 20, '10-19,50-59'],
  ['a socket and a NUMA node', dualSocketMultiNumaHT, '0-79', 60, '0-29,40-69'],
  ['a socket and a NUMA node, a core taken', dualSocketMultiNumaHT, '1-39,41-79', 60, '10-39,50-79'],
];

describe('takeByTopology (packed)', () => {
  it.each([
    ...common,
    ['one CPU from the fullest core', dualSocketHT, '1-5,7-11', 1, '2'],
    ['4 cores: 3 filling the first NUMA node, 1 from the second', dualSocketHT, '0-11', 8, '0-2,4,6-8,10'],
    ['32 cores: 30 filling 3 NUMA nodes, 2 from the fourth', dualSocketMultiNumaHT, '0-79', 64, '0-31,40-71'],
  ] as [string, CpuTopology, string, number, string][])('%s', (_, topo, available, n, expected) => {
    expect(result(takeByTopology(topo, cpus(available), n))).toBe(expected);
  });
});

/** One socket and NUMA node, 8 cores of 2 threads (i and i+8) in two uncore caches: cores 0-3 and 4-7. */
const splitUncoreHT: CpuTopology = new Map(
  Array.from({ length: 16 }, (_, i) => [
    i,
    { coreId: i % 8, socketId: 0, numaNodeId: 0, uncoreCacheId: i % 8 < 4 ? 0 : 1 },
  ]),
);

describe('takeByTopology with prefer-align-cpus-by-uncorecache', () => {
  const uncore = { preferAlignByUncoreCache: true };
  it.each([
    // Cores 0 and 1 taken: cache 0 has 2 free cores, cache 1 all 4.
    [
      'a request within one cache: the cores of the first cache that holds it',
      '2-7,10-15',
      6,
      '2-4,10-12',
      '4-6,12-14',
    ],
    ['a whole cache when the request needs all of one', '2-7,10-15', 8, '2-5,10-13', '4-7,12-15'],
    ['more than a cache: whole caches, then the rest from one', '0-15', 10, '0-4,8-12', '0-4,8-12'],
    // Whole cores only (what is left over the threads per core, rounded down): 3 CPUs pack as without the option.
    ['an odd request packs as without the option', '2-7,10-15', 3, '2-3,10', '2-3,10'],
  ])('%s', (_, available, n, packed, aligned) => {
    expect(result(takeByTopology(splitUncoreHT, cpus(available), n))).toBe(packed);
    expect(result(takeByTopology(splitUncoreHT, cpus(available), n, uncore))).toBe(aligned);
  });

  it('without uncore caches known, the socket stands for one (upstream getUncoreCacheID)', () => {
    expect(result(takeByTopology(dualSocketHT, cpus('0-11'), 4, uncore))).toBe(
      result(takeByTopology(dualSocketHT, cpus('0-11'), 4)),
    );
  });
});

describe('takeDistributedAcrossNuma (distribute-cpus-across-numa)', () => {
  it.each([
    ...common
      .filter(([name]) => name !== 'more CPUs than available')
      .map(([name, t, a, n, r]) => [name, t, a, n, 1, r]),
    ['4 cores, 2 on each NUMA node', dualSocketHT, '0-11', 8, 1, '0-3,6-9'],
    [
      '32 cores, 8 on each NUMA node',
      dualSocketMultiNumaHT,
      '0-79',
      64,
      1,
      '0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77',
    ],
    [
      '24 cores, 8 on each of the first 3 NUMA nodes',
      dualSocketMultiNumaHT,
      '0-79',
      48,
      1,
      '0-7,10-17,20-27,40-47,50-57,60-67',
    ],
    [
      '24 cores over the first 3 NUMA nodes, all but 2 of the first taken',
      dualSocketMultiNumaHT,
      '1-29,32-39,41-69,72-79',
      48,
      1,
      '1-8,10-17,20-27,41-48,50-57,60-67',
    ],
    [
      '24 cores over the last 3 NUMA nodes, though the first could hold 8',
      dualSocketMultiNumaHT,
      '2-29,31-39,42-69,71-79',
      48,
      1,
      '10-17,20-27,31-38,50-57,60-67,71-78',
    ],
    [
      '8 cores, 2 on each NUMA node',
      dualSocketMultiNumaHT,
      '0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71',
      16,
      1,
      '0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71',
    ],
    ['one CPU from socket 0', dualSocketHT, '1-5,7-11', 1, 1, '1'],
    ['one CPU from socket 0, in groups of 2', dualSocketHT, '1-5,7-11', 1, 2, '2'],
    ['13 cores over the first 2 NUMA nodes', dualSocketMultiNumaHT, '0-79', 26, 1, '0-6,10-16,40-45,50-55'],
    [
      '13 cores over the first 2 NUMA nodes, in groups of 2',
      dualSocketMultiNumaHT,
      '0-79',
      26,
      2,
      '0-6,10-15,40-46,50-55',
    ],
    [
      '31 cores, 15 CPUs on each NUMA node and 1 more on NUMA nodes 0 and 1',
      dualSocketMultiNumaHT,
      '0-79',
      62,
      1,
      '0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76',
    ],
    [
      '31 cores, 14 CPUs on each NUMA node and 2 more on NUMA nodes 0, 1 and 2, in groups of 2',
      dualSocketMultiNumaHT,
      '0-79',
      62,
      2,
      '0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76',
    ],
    [
      '31 cores, 1 more on NUMA nodes 2 and 3 to keep the balance',
      dualSocketMultiNumaHT,
      '0-8,10-18,20-39,40-48,50-58,60-79',
      62,
      1,
      '0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77',
    ],
    [
      '31 cores, 2 more on NUMA nodes 0, 2 and 3 to keep the balance, in groups of 2',
      dualSocketMultiNumaHT,
      '0-8,10-18,20-39,40-48,50-58,60-79',
      62,
      2,
      '0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77',
    ],
    [
      'the remainder from NUMA nodes with room for it',
      dualSocketMultiNumaHT,
      '0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76',
      34,
      1,
      '0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74',
    ],
  ] as [string, CpuTopology, string, number, number, string][])('%s', (_, topo, available, n, groupSize, expected) => {
    expect(result(takeDistributedAcrossNuma(topo, cpus(available), n, groupSize))).toBe(expected);
  });

  it('refuses more CPUs than are available', () => {
    expect(result(takeDistributedAcrossNuma(singleSocketHT, cpus('0,2,4,6'), 5, 1))).toBe(
      'not enough cpus available to satisfy request',
    );
  });
});

/** topoDualSocketNoHT: 8 CPUs, one thread per core, CPUs 0-3 on socket / NUMA node 0. */
const dualSocketNoHT: CpuTopology = new Map(
  Array.from({ length: 8 }, (_, i) => [i, { coreId: i, socketId: i < 4 ? 0 : 1, numaNodeId: i < 4 ? 0 : 1 }]),
);

describe('distribute-cpus-across-cores (upstream TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption)', () => {
  const spread = (topo: CpuTopology, available: string, n: number) =>
    result(takeByTopology(topo, cpus(available), n, { spread: true }));
  it('takes no whole cores: the CPUs by ID within the sockets in their order, whole NUMA nodes and sockets first', () => {
    // One thread of each core rather than both of one (packed takes 0,4 and 1).
    expect(spread(singleSocketHT, '0-7', 3)).toBe('0-2');
    expect(result(takeByTopology(singleSocketHT, cpus('0-7'), 3))).toBe('0-1,4');
    expect(spread(dualSocketHT, '0-11', 3)).toBe('0,2,4');
    expect(spread(dualSocketHT, '0-11', 6)).toBe('0,2,4,6,8,10');
    expect(spread(dualSocketHT, '0-11', 8)).toBe('0-4,6,8,10');
    expect(spread(dualSocketNoHT, '0-7', 2)).toBe('0-1');
    expect(spread(dualSocketMultiNumaHT, '0-79', 8)).toBe('0-7');
  });
});
