/**
 * The topology manager with the CPU manager as hint provider, as upstream's: the CPU manager's
 * hints (every set of NUMA nodes with room, preferred when as small as the request allows), their
 * merge under best-effort / restricted / single-numa-node, and pod admission in the container and
 * pod scopes with the CPUs allocated on the chosen NUMA nodes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { CpuManager } from '../../../src/agent/cpumanager/cpu-manager.js';
import { cpuTopologyHints, mergeHints, numaMasks } from '../../../src/agent/cpumanager/topology-hints.js';
import { admitWithTopology, TOPOLOGY_AFFINITY_ERROR } from '../../../src/agent/cpumanager/topology-admission.js';
import type { CpuTopology } from '../../../src/agent/cpumanager/topology.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-topo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** upstream's topoDualSocketHT: 12 CPUs, even ones on socket / NUMA node 0, odd ones on 1. */
const dual: CpuTopology = new Map(
  Array.from({ length: 12 }, (_, i) => [i, { coreId: i % 6, socketId: i % 2, numaNodeId: i % 2 }]),
);
const all = [...dual.keys()];
const guaranteed = (cpu: number): Partial<Container> => ({
  resources: { requests: { cpu: String(cpu), memory: '1Mi' }, limits: { cpu: String(cpu), memory: '1Mi' } },
});
const pod = (uid: string, ...cpus: number[]): Pod =>
  ({
    metadata: { name: uid, namespace: 'default', uid },
    spec: { containers: cpus.map((n, i) => ({ name: `c${i}`, image: 'i', ...guaranteed(n) })) },
  }) as Pod;
let n = 0;
const manager = () => {
  const m = new CpuManager({
    policy: 'static',
    stateFile: join(dir, `state-${n++}`),
    topology: dual,
    reservedMilli: 1000,
  });
  m.start();
  return m;
};

describe('topology hints', () => {
  it("iterates NUMA node sets as upstream's IterateBitMasks: by size, then in order", () => {
    expect(numaMasks([0, 1, 2])).toEqual([[0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2]]);
  });

  it('the CPU manager hints every NUMA set with room, preferring the smallest that could hold the request', () => {
    expect(cpuTopologyHints(dual, all, [], 2)).toEqual([
      { numaNodes: [0], preferred: true },
      { numaNodes: [1], preferred: true },
      { numaNodes: [0, 1], preferred: false },
    ]);
    // Only node 1 has room now; node 0 could hold it on an empty machine, so {0,1} stays unpreferred.
    expect(cpuTopologyHints(dual, [0, 1, 3, 5, 7], [], 3)).toEqual([
      { numaNodes: [1], preferred: true },
      { numaNodes: [0, 1], preferred: false },
    ]);
    // Larger than any node: both nodes, preferred.
    expect(cpuTopologyHints(dual, all, [], 8)).toEqual([{ numaNodes: [0, 1], preferred: true }]);
  });

  it('merges under the policies: the narrowest preferred hint; single-numa-node keeps single nodes; restricted and single-numa-node refuse an unpreferred best', () => {
    const hints = cpuTopologyHints(dual, all, [], 2);
    expect(mergeHints('best-effort', [0, 1], hints)).toEqual({
      hint: { numaNodes: [0], preferred: true },
      admit: true,
    });
    const wide = cpuTopologyHints(dual, all, [], 8);
    expect(mergeHints('restricted', [0, 1], wide)).toEqual({
      hint: { numaNodes: [0, 1], preferred: true },
      admit: true,
    });
    expect(mergeHints('single-numa-node', [0, 1], wide)).toEqual({ hint: { preferred: false }, admit: false });
    expect(mergeHints('best-effort', [0, 1], wide).admit).toBe(true);
    // No preference (a container without exclusive CPUs): any node, admitted by every policy.
    expect(mergeHints('single-numa-node', [0, 1], undefined)).toEqual({ hint: { preferred: true }, admit: true });
    expect(mergeHints('restricted', [0, 1], undefined)).toEqual({
      hint: { numaNodes: [0, 1], preferred: true },
      admit: true,
    });
    // No way at all (an empty list): refused where preference is required.
    expect(mergeHints('restricted', [0, 1], []).admit).toBe(false);
  });
});

describe('topology admission', () => {
  it('container scope: each container on one NUMA node when it fits; single-numa-node refuses what does not fit one node, restricted does not', () => {
    const m = manager();
    const t = { policy: 'single-numa-node' as const, scope: 'container' as const, numaNodes: [0, 1] };
    expect(admitWithTopology(m, t, pod('a', 4, 4), [])).toBeUndefined();
    // CPU 0 is reserved: node 0 gives the first container four of its five, node 1 the second.
    expect(m.exclusiveCpus('a', 'c0').every((c) => c % 2 === 0)).toBe(true);
    expect(m.exclusiveCpus('a', 'c1').every((c) => c % 2 === 1)).toBe(true);
    expect(admitWithTopology(m, t, pod('b', 7), [pod('a')])).toEqual(TOPOLOGY_AFFINITY_ERROR);
    expect(m.exclusiveCpus('b', 'c0')).toEqual([]);
    expect(admitWithTopology(manager(), { ...t, policy: 'restricted' }, pod('b', 7), [])).toBeUndefined();
  });

  it("pod scope: one hint for the pod's CPUs, every container on its NUMA node", () => {
    const m = manager();
    expect(
      admitWithTopology(m, { policy: 'single-numa-node', scope: 'pod', numaNodes: [0, 1] }, pod('p', 3, 3), []),
    ).toBeUndefined();
    // Node 0 has five CPUs left after the reserved one: only node 1 holds all six.
    expect([...m.exclusiveCpus('p', 'c0'), ...m.exclusiveCpus('p', 'c1')].every((c) => c % 2 === 1)).toBe(true);
  });

  it("none: allocates without hints; a failed allocation is upstream's UnexpectedAdmissionError", () => {
    const m = manager();
    expect(admitWithTopology(m, { policy: 'none', scope: 'container', numaNodes: [0, 1] }, pod('big', 12), [])).toEqual(
      {
        reason: 'UnexpectedAdmissionError',
        message:
          'Allocate failed due to not enough cpus available to satisfy request: requested=12, available=11, which is unexpected',
      },
    );
  });
});
