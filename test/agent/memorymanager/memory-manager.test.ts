/**
 * The memory manager's Static policy as upstream's (policy_static.go): the machine state from the
 * NUMA nodes and the reservations, a Guaranteed container's memory and huge pages on the narrowest
 * set of nodes that holds them, a set never mixed between single- and multi-node allocations, a
 * topology hint extended when it cannot hold the request, init containers' memory reused by the
 * containers after them (not a sidecar's), stale assignments released, and the state read back and
 * checked after a restart. Also as the topology manager's third hint provider.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../../src/api/types.js';
import { decodeMemoryCheckpoint } from '../../../src/agent/memorymanager/checkpoint.js';
import { MemoryManager, type MemoryManagerConfig } from '../../../src/agent/memorymanager/memory-manager.js';
import type { NumaNodeMemory } from '../../../src/agent/memorymanager/memory-topology.js';
import { podMemoryRequest, violatesNumaAllocations } from '../../../src/agent/memorymanager/static-policy.js';
import { defaultMachineState } from '../../../src/agent/memorymanager/machine-state.js';
import { admitWithTopology, TOPOLOGY_AFFINITY_ERROR } from '../../../src/agent/topologymanager/topology-admission.js';

const Mi = 2 ** 20;
const Gi = 2 ** 30;
const dir = mkdtempSync(join(tmpdir(), 'tsk-memory-manager-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Two NUMA nodes of 4 GiB; node 0 has 512 huge pages of 2 MiB and 256 MiB reserved for the system. */
const twoNodes: NumaNodeMemory[] = [
  { id: 0, memoryBytes: 4 * Gi, hugePages: [{ pageSizeKb: 2048, pages: 512 }] },
  { id: 1, memoryBytes: 4 * Gi, hugePages: [{ pageSizeKb: 2048, pages: 0 }] },
];
const reserved = new Map([[0, new Map([['memory', 256 * Mi]])]]);

function manager(o: Partial<MemoryManagerConfig> & { stateFile?: string } = {}) {
  const m = new MemoryManager({
    policy: 'Static',
    stateFile: o.stateFile ?? join(dir, `state-${files++}`),
    nodes: twoNodes,
    reserved,
    ...o,
  });
  m.start();
  return m;
}

const guaranteed = (memory: string, extra: Record<string, string> = {}): Container['resources'] => ({
  requests: { cpu: '1', memory, ...extra },
  limits: { cpu: '1', memory, ...extra },
});
const container = (name: string, resources?: Container['resources'], restartPolicy?: string): Container =>
  ({ name, image: 'busybox', resources, ...(restartPolicy ? { restartPolicy } : {}) }) as Container;
const pod = (uid: string, containers: Container[], initContainers: Container[] = []): Pod =>
  ({ metadata: { uid, name: uid, namespace: 'default' }, spec: { containers, initContainers } }) as Pod;

/** Admits `p` with the memory manager alone under the `none` topology policy; the refusal, or undefined. */
function admit(m: MemoryManager, p: Pod, active: Pod[] = []) {
  return admitWithTopology(
    { memory: m },
    { policy: 'none', scope: 'container', numaNodes: [0, 1] },
    p,
    active,
    undefined,
    true,
  );
}

const stateOf = (path: string) => decodeMemoryCheckpoint(readFileSync(path, 'utf8'));

describe('memory manager, Static policy', () => {
  it("writes the machine's state at start: each node's memory less what is reserved and what its huge pages hold", () => {
    const stateFile = join(dir, 'fresh');
    manager({ stateFile });
    const state = stateOf(stateFile).machineState;
    expect(state.get(0)?.memoryMap.get('memory')).toEqual({
      total: 4 * Gi,
      systemReserved: 256 * Mi,
      allocatable: 4 * Gi - 256 * Mi - Gi,
      reserved: 0,
      free: 4 * Gi - 256 * Mi - Gi,
    });
    expect(state.get(0)?.memoryMap.get('hugepages-2Mi')).toMatchObject({ total: Gi, allocatable: Gi, free: Gi });
    expect(state.get(1)?.memoryMap.get('memory')).toMatchObject({ allocatable: 4 * Gi });
    expect(state.get(1)?.cells).toEqual([1]);
  });

  it("pins a Guaranteed container's memory and huge pages to one node; others get nothing", () => {
    const m = manager();
    const p = pod('g', [container('main', guaranteed('1Gi', { 'hugepages-2Mi': '256Mi' }))]);
    expect(admit(m, p)).toBeUndefined();
    expect(m.numaNodesOf('g', 'main')).toEqual([0]);
    expect(m.memoryOf('g', 'main')).toEqual([
      { numaAffinity: [0], type: 'memory', size: Gi },
      { numaAffinity: [0], type: 'hugepages-2Mi', size: 256 * Mi },
    ]);
    const burstable = pod('b', [container('main', { requests: { memory: '1Gi' } })]);
    expect(admit(m, burstable, [p])).toBeUndefined();
    expect(m.numaNodesOf('b', 'main')).toBeUndefined();
    expect(m.counts()).toEqual({ pinningRequests: 1, pinningErrors: 0 });
  });

  it('spans nodes for a request no node holds, and keeps single-node and multi-node allocations apart', () => {
    const m = manager();
    const small = pod('small', [container('main', guaranteed('1Gi'))]);
    expect(admit(m, small)).toBeUndefined();
    expect(m.numaNodesOf('small', 'main')).toEqual([0]);
    // 5 GiB fits only on both nodes, but node 0 already serves a single-node allocation.
    const big = pod('big', [container('main', guaranteed('5Gi'))]);
    expect(admit(m, big, [small])).toEqual({
      reason: 'UnexpectedAdmissionError',
      message:
        'Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected',
    });
    expect(m.counts()).toEqual({ pinningRequests: 2, pinningErrors: 1 });
    // Without the small pod, the big one gets both nodes as one group; a later small pod cannot use either alone.
    const fresh = manager();
    expect(admit(fresh, big)).toBeUndefined();
    expect(fresh.numaNodesOf('big', 'main')).toEqual([0, 1]);
    expect(fresh.containerHints(small, small.spec.containers[0])).toEqual([[{ numaNodes: [0, 1], preferred: false }]]);
    expect(admit(fresh, small, [big])).toBeUndefined();
    expect(fresh.numaNodesOf('small', 'main')).toEqual([0, 1]);
  });

  it('extends a topology hint that cannot hold the request to the narrowest set that includes it', () => {
    const m = manager();
    const p = pod('wide', [container('main', guaranteed('5Gi'))]);
    m.beginAdmission(p, [], true);
    expect(m.allocateContainer(p, p.spec.containers[0], { numaNodes: [1], preferred: false })).toBeUndefined();
    expect(m.numaNodesOf('wide', 'main')).toEqual([0, 1]);
    // A preferred hint can only be extended to a preferred one (5 GiB on two nodes is as narrow as it gets).
    const other = manager();
    other.beginAdmission(p, [], true);
    expect(other.allocateContainer(p, p.spec.containers[0], { numaNodes: [0], preferred: true })).toBeUndefined();
  });

  it("reuses a run-to-completion init container's memory for the containers after it, not a sidecar's", () => {
    const stateFile = join(dir, 'reuse');
    const m = manager({ stateFile });
    const p = pod('reuse', [container('main', guaranteed('2Gi'))], [container('init', guaranteed('1Gi'))]);
    expect(admit(m, p)).toBeUndefined();
    const state = stateOf(stateFile);
    // 2 GiB reserved in all, not 3: main took the init container's GiB, whose block now shows 0.
    expect(state.machineState.get(0)?.memoryMap.get('memory')?.reserved).toBe(2 * Gi);
    expect(state.entries.get('reuse')?.get('init')).toEqual([{ numaAffinity: [0], type: 'memory', size: 0 }]);
    const sidecarFile = join(dir, 'sidecar');
    const s = manager({ stateFile: sidecarFile });
    const withSidecar = pod(
      'sidecar',
      [container('main', guaranteed('1Gi'))],
      [container('proxy', guaranteed('512Mi'), 'Always')],
    );
    expect(admit(s, withSidecar)).toBeUndefined();
    expect(stateOf(sidecarFile).machineState.get(0)?.memoryMap.get('memory')?.reserved).toBe(Gi + 512 * Mi);
    // The pod's request as the pod scope sees it: the sidecar runs beside the containers.
    expect(podMemoryRequest(withSidecar)).toEqual(new Map([['memory', Gi + 512 * Mi]]));
    expect(podMemoryRequest(p)).toEqual(new Map([['memory', 2 * Gi]]));
  });

  it('releases the memory of containers no longer in an active pod at the next admission', () => {
    const stateFile = join(dir, 'stale');
    const m = manager({ stateFile });
    const gone = pod('gone', [container('main', guaranteed('3Gi'))]);
    expect(admit(m, gone)).toBeUndefined();
    const next = pod('next', [container('main', guaranteed('1Gi'))]);
    // Until every pod source has delivered its pods, only pods seen active since the start are released: this one
    // was seen, so it goes.
    m.beginAdmission(next, [], false);
    expect(m.memoryOf('gone', 'main')).toEqual([]);
    expect(stateOf(stateFile).machineState.get(0)?.memoryMap.get('memory')?.reserved).toBe(0);
    expect(stateOf(stateFile).machineState.get(0)?.numberOfAssignments).toBe(0);
  });

  it('reads its state back after a restart: hints from the blocks, and a changed reservation stops the start', () => {
    const stateFile = join(dir, 'restart');
    const p = pod('kept', [container('main', guaranteed('1Gi'))]);
    expect(admit(manager({ stateFile }), p)).toBeUndefined();
    const again = manager({ stateFile });
    expect(again.numaNodesOf('kept', 'main')).toEqual([0]);
    expect(again.containerHints(p, p.spec.containers[0])).toEqual([[{ numaNodes: [0], preferred: true }]]);
    // Before every source has delivered its pods, a pod not seen since the start keeps its memory.
    again.beginAdmission(pod('other', []), [], false);
    expect(again.numaNodesOf('kept', 'main')).toEqual([0]);
    expect(() => manager({ stateFile, reserved: new Map([[0, new Map([['memory', 512 * Mi]])]]) })).toThrow(
      '[memorymanager] the expected machine state is different from the real one',
    );
    expect(() => manager({ stateFile, policy: 'None' })).toThrow(/differs from state checkpoint policy "Static"/);
    // A NUMA node gone with a container's memory on it.
    const spanning = join(dir, 'spanning');
    expect(
      admit(manager({ stateFile: spanning }), pod('wide', [container('main', guaranteed('5Gi'))])),
    ).toBeUndefined();
    expect(() => manager({ stateFile: spanning, nodes: [twoNodes[0]] })).toThrow(
      '[memorymanager] (pod: wide, container: main) the memory assignment uses the NUMA that does not exist',
    );
  });

  it('never places memory on a NUMA node its state does not have (a hint from the CPUs alone)', () => {
    const state = defaultMachineState(twoNodes, reserved);
    expect(violatesNumaAllocations(state, [0, 1])).toBe(false);
    expect(violatesNumaAllocations(state, [0, 5])).toBe(true);
  });

  it('with None keeps only its state file', () => {
    const stateFile = join(dir, 'none');
    const m = manager({ stateFile, policy: 'None' });
    const p = pod('g', [container('main', guaranteed('1Gi'))]);
    expect(admit(m, p)).toBeUndefined();
    expect(m.numaNodesOf('g', 'main')).toBeUndefined();
    expect(m.allocatableMemory()).toEqual([]);
    expect(readFileSync(stateFile, 'utf8')).toBe('{"policyName":"None","machineState":{},"checksum":4236770233}');
  });
});

describe('memory manager as a hint provider of the topology manager', () => {
  const t = (policy: 'single-numa-node' | 'best-effort') => ({
    policy,
    scope: 'container' as const,
    numaNodes: [0, 1],
  });
  const big = pod('big', [container('main', guaranteed('5Gi'))]);

  it('single-numa-node refuses a pod whose memory needs two nodes; best-effort admits it across both', () => {
    expect(admitWithTopology({ memory: manager() }, t('single-numa-node'), big, [], undefined, true)).toEqual(
      TOPOLOGY_AFFINITY_ERROR,
    );
    const m = manager();
    expect(admitWithTopology({ memory: m }, t('best-effort'), big, [], undefined, true)).toBeUndefined();
    expect(m.numaNodesOf('big', 'main')).toEqual([0, 1]);
  });

  it("puts a container's memory on the node the merged hint names", () => {
    const m = manager();
    const fill = pod('fill', [container('main', guaranteed('2Gi'))]);
    expect(admitWithTopology({ memory: m }, t('single-numa-node'), fill, [], undefined, true)).toBeUndefined();
    expect(m.numaNodesOf('fill', 'main')).toEqual([0]);
    // Node 0 has 768 MiB left: a 1 GiB container goes to node 1.
    const next = pod('next', [container('main', guaranteed('1Gi'))]);
    expect(admitWithTopology({ memory: m }, t('single-numa-node'), next, [fill], undefined, true)).toBeUndefined();
    expect(m.numaNodesOf('next', 'main')).toEqual([1]);
    expect(m.allocatableMemory()).toEqual(
      expect.arrayContaining([
        { numaAffinity: [0], type: 'memory', size: 4 * Gi - 256 * Mi - Gi },
        { numaAffinity: [0], type: 'hugepages-2Mi', size: Gi },
        { numaAffinity: [1], type: 'memory', size: 4 * Gi },
      ]),
    );
  });
});
