/**
 * The topology manager with the CPU and device managers as hint providers, as upstream's: the CPU
 * manager's hints (every set of NUMA nodes with room, preferred when as small as the request
 * allows), their merge under best-effort / restricted / single-numa-node, and pod admission in the
 * container and pod scopes with the CPUs (and devices) allocated on the chosen NUMA nodes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { CpuManager } from '../../../src/agent/cpumanager/cpu-manager.js';
import { cpuTopologyHints } from '../../../src/agent/cpumanager/topology-hints.js';
import { mergeHints, numaMasks } from '../../../src/agent/topologymanager/hint-merge.js';
import {
  admitWithTopology as admitWithProviders,
  TOPOLOGY_AFFINITY_ERROR,
  type TopologyManagerConfig,
} from '../../../src/agent/topologymanager/topology-admission.js';
import type { CpuTopology } from '../../../src/agent/cpumanager/topology.js';
import { DeviceManager } from '../../../src/agent/devices/device-manager.js';
import { createLogger } from '../../../src/lib/logger.js';
import { startSamplePlugin } from '../../fixtures/sample-device-plugin.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-topo-'));
/** The CPU manager as the one provider: its admission is synchronous. */
const admitWithTopology = (m: CpuManager, t: TopologyManagerConfig, p: Pod, active: Pod[]) =>
  admitWithProviders({ cpus: m }, t, p, active);
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

/** Two sockets of two NUMA nodes each, 4 CPUs per node (no SMT): CPU c on node floor(c / 4), socket floor(c / 8). */
const fourNodes: CpuTopology = new Map(
  Array.from({ length: 16 }, (_, c) => [c, { coreId: c, socketId: Math.floor(c / 8), numaNodeId: Math.floor(c / 4) }]),
);

describe('align-by-socket (CPU manager option, upstream isHintSocketAligned / getAlignedCPUs)', () => {
  /** A static CPU manager on `topology` with CPUs 10-15 reserved (socket 1 has two free: 8 and 9). */
  const make = (o: { alignBySocket?: boolean; topologyPolicy?: string; topology?: CpuTopology } = {}) => {
    const m = new CpuManager({
      policy: 'static',
      stateFile: join(dir, `state-${n++}`),
      topology: o.topology ?? fourNodes,
      reservedCpus: [10, 11, 12, 13, 14, 15],
      reservedMilli: 0,
      options: o.alignBySocket === false ? {} : { 'align-by-socket': 'true' },
      optionGates: { alpha: true, beta: true },
      topologyPolicy: o.topologyPolicy ?? 'best-effort',
    });
    m.start();
    return m;
  };

  it('prefers, besides the narrowest NUMA sets, those within as few sockets as the narrowest need', () => {
    const all16 = [...fourNodes.keys()];
    const preferred = (hints: { numaNodes?: readonly number[]; preferred: boolean }[]) =>
      hints.filter((h) => h.preferred).map((h) => h.numaNodes);
    // Three CPUs fit one NUMA node: every single node, and with the option the pairs on one socket too.
    expect(preferred(cpuTopologyHints(fourNodes, all16, [], 3, true))).toEqual([[0], [1], [2], [3], [0, 1], [2, 3]]);
    expect(preferred(cpuTopologyHints(fourNodes, all16, [], 3))).toEqual([[0], [1], [2], [3]]);
  });

  it('takes CPUs beyond the hinted NUMA node from its socket first, not from the other socket', () => {
    const sixOn = (m: CpuManager) => {
      const p = pod('wide', 6);
      m.beginAdmission(p, []);
      expect(m.allocateContainer(p, p.spec.containers[0], [0])).toBeUndefined();
      return m.exclusiveCpus('wide', 'c0');
    };
    // Node 0 holds four; packing takes the other two where the fewest CPUs are free: socket 1's 8 and 9.
    expect(sixOn(make({ alignBySocket: false }))).toEqual([0, 1, 2, 3, 8, 9]);
    // The hint widened to its socket keeps all six on socket 0.
    expect(sixOn(make())).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('is refused as upstream under single-numa-node and where sockets outnumber NUMA nodes', () => {
    expect(() => make({ topologyPolicy: 'single-numa-node' })).toThrow(
      'new static policy error: Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option',
    );
    const twoSocketsOneNode: CpuTopology = new Map(
      Array.from({ length: 16 }, (_, c) => [c, { coreId: c, socketId: Math.floor(c / 8), numaNodeId: 0 }]),
    );
    expect(() => make({ topologyPolicy: 'none', topology: twoSocketsOneNode })).toThrow(
      'new static policy error: Align by socket is not compatible with hardware where number of sockets are more than number of NUMA',
    );
  });
});

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
    expect(mergeHints('best-effort', [0, 1], [hints])).toEqual({
      hint: { numaNodes: [0], preferred: true },
      admit: true,
    });
    const wide = cpuTopologyHints(dual, all, [], 8);
    expect(mergeHints('restricted', [0, 1], [wide])).toEqual({
      hint: { numaNodes: [0, 1], preferred: true },
      admit: true,
    });
    expect(mergeHints('single-numa-node', [0, 1], [wide])).toEqual({ hint: { preferred: false }, admit: false });
    expect(mergeHints('best-effort', [0, 1], [wide]).admit).toBe(true);
    // No preference (a container without exclusive CPUs): any node, admitted by every policy.
    expect(mergeHints('single-numa-node', [0, 1], [undefined])).toEqual({ hint: { preferred: true }, admit: true });
    expect(mergeHints('restricted', [0, 1], [undefined])).toEqual({
      hint: { numaNodes: [0, 1], preferred: true },
      admit: true,
    });
    // No way at all (an empty list): refused where preference is required.
    expect(mergeHints('restricted', [0, 1], [[]]).admit).toBe(false);
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

  it('with devices too: the CPUs go to the NUMA node of the device the container gets', async () => {
    const devicesDir = mkdtempSync(join(dir, 'devices-'));
    const devices = new DeviceManager({ dir: devicesDir, logger: createLogger({ level: 'fatal' }) });
    await devices.start();
    const plugin = await startSamplePlugin({
      dir: devicesDir,
      name: 'gpu',
      resource: 'example.com/gpu',
      devices: ['g0'],
      numa: { g0: [1] },
      mountHostPath: '/tmp',
      deviceHostPath: '/dev/null',
    });
    try {
      for (let i = 0; i < 200 && devices.allocatable()['example.com/gpu'] !== 1; i++)
        await new Promise((r) => setTimeout(r, 25));
      const m = manager();
      const withGpu = pod('g', 4);
      (withGpu.spec.containers[0].resources!.limits as Record<string, string>)['example.com/gpu'] = '1';
      const t = { policy: 'single-numa-node' as const, scope: 'container' as const, numaNodes: [0, 1] };
      // Alone, four CPUs would go to node 0 (the narrower mask); the device is on node 1.
      expect(await admitWithProviders({ cpus: m, devices }, t, withGpu, [])).toBeUndefined();
      expect(m.exclusiveCpus('g', 'c0').every((c) => c % 2 === 1)).toBe(true);
      expect(devices.devicesOf('g', 'c0')[0].ids).toEqual(['g0']);
      expect(plugin.allocations).toEqual([['g0']]);
      // The device is taken: a second such pod fits no single node.
      const again = pod('h', 1);
      (again.spec.containers[0].resources!.limits as Record<string, string>)['example.com/gpu'] = '1';
      expect(await admitWithProviders({ cpus: m, devices }, t, again, [withGpu])).toEqual(TOPOLOGY_AFFINITY_ERROR);
    } finally {
      await plugin.close();
      await devices.stop();
    }
  });
});
