/**
 * The static CPU manager policy as upstream's: which CPUs an exclusive allocation takes (its
 * test topologies), the reserved CPUs, allocation at admission, the shared pool every other
 * container runs on, release of a gone pod's CPUs, reuse of init containers' CPUs, the state
 * across restarts and the checks that stop a kubelet whose state does not fit.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { takeByTopology } from '../../../src/agent/cpumanager/cpu-assignment.js';
import { CpuManager, guaranteedCpus } from '../../../src/agent/cpumanager/cpu-manager.js';
import { readCpuTopology, type CpuTopology } from '../../../src/agent/cpumanager/topology.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cpumgr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** upstream's topoSingleSocketHT: 8 CPUs, 4 cores of 2 threads (i and i+4), one socket. */
const singleSocketHT: CpuTopology = new Map(
  Array.from({ length: 8 }, (_, i) => [i, { coreId: i % 4, socketId: 0, numaNodeId: 0 }]),
);
/** upstream's topoDualSocketHT: 12 CPUs, even ones on socket 0, cores (0,6) (2,8) (4,10) (1,7) (3,9) (5,11). */
const dualSocketHT: CpuTopology = new Map(
  Array.from({ length: 12 }, (_, i) => [i, { coreId: i % 6, socketId: i % 2, numaNodeId: i % 2 }]),
);
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('takeByTopology', () => {
  it("takes as upstream's takeByTopologyNUMAPacked: whole sockets, then whole cores, then single CPUs of the fullest cores", () => {
    const take = (t: CpuTopology, available: number[], n: number) => {
      const r = takeByTopology(t, available, n);
      return r.ok ? r.cpus : r.message;
    };
    expect(take(singleSocketHT, range(0, 7), 1)).toEqual([0]);
    expect(take(singleSocketHT, range(0, 7), 2)).toEqual([0, 4]);
    expect(take(singleSocketHT, range(1, 7), 1)).toEqual([4]);
    expect(take(singleSocketHT, range(1, 7), 3)).toEqual([1, 4, 5]);
    expect(take(dualSocketHT, range(0, 11), 6)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(take(dualSocketHT, range(0, 11), 8)).toEqual([0, 1, 2, 4, 6, 7, 8, 10]);
    expect(take(singleSocketHT, [1, 2], 3)).toBe(
      'not enough cpus available to satisfy request: requested=3, available=2',
    );
  });
});

const pod = (uid: string, containers: Partial<Container>[], init: Partial<Container>[] = []): Pod =>
  ({
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      containers: containers.map((c, i) => ({ name: `c${i}`, image: 'i', ...c })),
      initContainers: init.map((c, i) => ({ name: `init${i}`, image: 'i', ...c })),
    },
  }) as Pod;
const guaranteed = (cpu: string) => ({
  resources: { requests: { cpu, memory: '1Mi' }, limits: { cpu, memory: '1Mi' } },
});

describe('CpuManager (static)', () => {
  const stateFile = join(dir, 'cpu_manager_state');
  const make = (o: { reservedMilli?: number; reservedCpus?: number[]; topology?: CpuTopology } = {}) => {
    const m = new CpuManager({
      policy: 'static',
      stateFile,
      topology: o.topology ?? singleSocketHT,
      reservedMilli: o.reservedMilli ?? 1000,
      reservedCpus: o.reservedCpus,
    });
    m.start();
    return m;
  };

  it('gives Guaranteed integer requests CPUs of their own; everything else runs on the shared pool, which keeps the reserved CPUs', () => {
    rmSync(stateFile, { force: true });
    const m = make();
    expect(m.allocatableCpus()).toEqual(range(1, 7));
    const g = pod('g', [guaranteed('2'), guaranteed('500m')]);
    expect(m.allocate(g, [])).toBeUndefined();
    // CPU 0 is reserved (the lowest core's first thread), so the first whole free core is 1 (1 and 5).
    expect(m.exclusiveCpus('g', 'c0')).toEqual([1, 5]);
    expect(m.containerCpuset('g', 'c0')).toBe('1,5');
    // A fractional request runs on the shared pool, as a Burstable pod's containers do.
    expect(m.containerCpuset('g', 'c1')).toBe('0,2-4,6-7');
    expect(m.containerCpuset('other', 'x')).toBe('0,2-4,6-7');
    expect(
      guaranteedCpus(pod('b', [{ resources: { requests: { cpu: '2' } } }]), {
        name: 'c0',
        resources: { requests: { cpu: '2' } },
      } as Container),
    ).toBe(0);
    // Not enough left: upstream's message (the admission handler wraps it).
    expect(m.allocate(pod('big', [guaranteed('6')]), [g])).toEqual({
      reason: 'UnexpectedAdmissionError',
      message:
        'Allocate failed due to not enough cpus available to satisfy request: requested=6, available=5, which is unexpected',
    });
    // upstream's metrics: two pinning requests (one failed), 2 CPUs exclusive, the shared pool less the reserved CPU.
    // No whole-core alignment asked for (full-pcpus-only): none counted either way.
    expect(m.counts()).toEqual({
      pinningRequests: 2,
      pinningErrors: 1,
      sharedPoolMilli: 5000,
      exclusiveCpus: 2,
      allocatedPerNuma: new Map([[0, 2]]),
      physicalCpuAlignment: { aligned: 0, failed: 0 },
    });
    // The state survives a restart; a pod no longer active gives its CPUs back.
    const again = make();
    expect(again.exclusiveCpus('g', 'c0')).toEqual([1, 5]);
    again.removeStale(new Set());
    expect(again.containerCpuset('other', 'x')).toBe('0-7');
    expect(make().exclusiveCpus('g', 'c0')).toEqual([]);
  });

  it('distribute-cpus-across-numa: a request one NUMA node cannot hold is spread evenly over two', () => {
    const numaOf = (cpus: readonly number[]) => cpus.map((cpu) => dualSocketHT.get(cpu)!.numaNodeId);
    const allocate = (options: Record<string, string>) => {
      rmSync(stateFile, { force: true });
      const m = new CpuManager({
        policy: 'static',
        stateFile,
        topology: dualSocketHT,
        reservedCpus: [0],
        reservedMilli: 0,
        options,
      });
      m.start();
      expect(m.allocate(pod('g', [guaranteed('8')]), [])).toBeUndefined();
      const cpus = numaOf(m.exclusiveCpus('g', 'c0'));
      // kubelet_cpu_manager_allocation_per_numa: the same CPUs, counted by node.
      expect(m.counts().allocatedPerNuma).toEqual(
        new Map([0, 1].map((node) => [node, cpus.filter((n) => n === node).length])),
      );
      return cpus;
    };
    // Packed: NUMA node 1 whole (6 CPUs), 2 from node 0; spread: 4 from each.
    expect(allocate({}).sort((a, b) => a - b)).toEqual([0, 0, 1, 1, 1, 1, 1, 1]);
    expect(allocate({ 'distribute-cpus-across-numa': 'true' }).sort((a, b) => a - b)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });

  it('strict-cpu-reservation: the reserved CPUs leave the shared pool too; a state that disagrees stops the start', () => {
    rmSync(stateFile, { force: true });
    const strict = (options: Record<string, string>) => {
      const m = new CpuManager({ policy: 'static', stateFile, topology: singleSocketHT, reservedMilli: 1000, options });
      m.start();
      return m;
    };
    const m = strict({ 'strict-cpu-reservation': 'true' });
    // CPU 0 is reserved: no container runs there, shared or exclusive.
    expect(m.containerCpuset('other', 'x')).toBe('1-7');
    expect(m.allocate(pod('g', [guaranteed('2')]), [])).toBeUndefined();
    expect(m.exclusiveCpus('g', 'c0')).toEqual([1, 5]);
    expect(m.containerCpuset('other', 'x')).toBe('2-4,6-7');
    expect(m.counts()).toMatchObject({ sharedPoolMilli: 5000, exclusiveCpus: 2 });
    expect(JSON.parse(readFileSync(stateFile, 'utf8')).defaultCpuSet).toBe('2-4,6-7');
    // The same state restarts with the option, not without it (the reserved CPU is not shared).
    expect(strict({ 'strict-cpu-reservation': 'true' }).exclusiveCpus('g', 'c0')).toEqual([1, 5]);
    expect(() => strict({})).toThrow('not all reserved cpus: "0" are present in defaultCpuSet: "2-4,6-7"');
    // A state written without the option shares the reserved CPU: refused with it, as upstream.
    rmSync(stateFile, { force: true });
    strict({});
    expect(() => strict({ 'strict-cpu-reservation': 'true' })).toThrow(
      'some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-7"',
    );
  });

  it('after a restart, admission keeps the CPUs of pods of the state not admitted again yet; the reconcile pass releases them', async () => {
    rmSync(stateFile, { force: true });
    make().allocate(pod('g', [guaranteed('2')]), []);
    const restarted = make();
    // The first pod admitted after the restart: g is not in the active list yet, and keeps its CPUs.
    expect(restarted.allocate(pod('h', [guaranteed('2')]), [])).toBeUndefined();
    expect([restarted.exclusiveCpus('g', 'c0'), restarted.exclusiveCpus('h', 'c0')]).toEqual([
      [1, 5],
      [2, 6],
    ]);
    // Once every source has delivered its pods, a pod of the state that is not active is gone.
    await restarted.reconcile(new Set(['h']), [], async () => {});
    expect(restarted.exclusiveCpus('g', 'c0')).toEqual([]);
    // A pod seen active and then gone is released by the next admission too.
    restarted.allocate(pod('k', [guaranteed('1')]), []);
    expect(restarted.exclusiveCpus('h', 'c0')).toEqual([]);
  });

  it("reuses an init container's CPUs for the app containers, not a sidecar's", () => {
    rmSync(stateFile, { force: true });
    const m = make();
    m.allocate(pod('p', [guaranteed('2')], [guaranteed('2')]), []);
    expect(m.exclusiveCpus('p', 'init0')).toEqual([1, 5]);
    expect(m.exclusiveCpus('p', 'c0')).toEqual([1, 5]);
    m.allocate(pod('s', [guaranteed('2')], [{ ...guaranteed('2'), restartPolicy: 'Always' }]), [pod('p', [])]);
    expect(m.exclusiveCpus('s', 'init0')).toEqual([2, 6]);
    expect(m.exclusiveCpus('s', 'c0')).toEqual([3, 7]);
  });

  it('writes each running container its cpuset when it changed, once', async () => {
    rmSync(stateFile, { force: true });
    const m = make();
    const writes: string[] = [];
    const update = async (id: string, cpuset: string) => {
      writes.push(`${id}=${cpuset}`);
    };
    const running = [
      { podUid: 'shared', name: 'c0', id: 'a' },
      { podUid: 'gone', name: 'c0', id: 'b' },
    ];
    m.created('shared', 'c0', 'a', '0-7');
    await m.reconcile(new Set(['shared']), running, update);
    expect(writes).toEqual([]);
    m.allocate(pod('g', [guaranteed('2')]), [pod('shared', [])]);
    running.push({ podUid: 'g', name: 'c0', id: 'c' });
    await m.reconcile(new Set(['shared', 'g']), running, update);
    expect(writes).toEqual(['a=0,2-4,6-7', 'c=1,5']);
    await m.reconcile(new Set(['shared', 'g']), running, update);
    expect(writes).toHaveLength(2);
    // The exclusive pod goes: its CPUs return and the shared container gets them.
    await m.reconcile(new Set(['shared']), running, update);
    expect(writes.at(-1)).toBe('a=0-7');
  });

  it('refuses what upstream refuses: no reservation, a state that does not fit the machine or the reservation', () => {
    rmSync(stateFile, { force: true });
    expect(() => make({ reservedMilli: 0 })).toThrow(
      '[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero',
    );
    expect(make({ reservedMilli: 1500 }).allocatableCpus()).toEqual([1, 2, 3, 5, 6, 7]);
    expect(make({ reservedCpus: [3] }).allocatableCpus()).toEqual([0, 1, 2, 4, 5, 6, 7]);
    // The state was written for 8 CPUs: a machine with 12 does not fit it.
    expect(() => make({ topology: dualSocketHT })).toThrow(
      'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-7"',
    );
    writeFileSync(stateFile, '{"policyName":"static","defaultCpuSet":"1-7","checksum":0}');
    expect(() => make()).toThrow('not all reserved cpus: "0" are present in defaultCpuSet: "1-7"');
    writeFileSync(stateFile, '{"policyName":"static","defaultCpuSet":"0-7","entries":{"p":{"c":"1"}},"checksum":0}');
    expect(() => make()).toThrow('pod: p, container: c cpuset: "1" overlaps with default cpuset "0-7"');
    writeFileSync(stateFile, '{"policyName":"static","defaultCpuSet":"","entries":{"p":{"c":"1"}},"checksum":0}');
    expect(() => make()).toThrow('default cpuset cannot be empty');
  });

  it("full-pcpus-only: whole physical cores or upstream's SMTAlignmentError; the reserved CPUs' siblings are not free cores", () => {
    rmSync(stateFile, { force: true });
    const m = new CpuManager({
      policy: 'static',
      stateFile,
      topology: singleSocketHT,
      reservedMilli: 1000,
      options: { 'full-pcpus-only': 'true' },
    });
    m.start();
    expect(m.allocate(pod('odd', [guaranteed('3')]), [])).toEqual({
      reason: 'SMTAlignmentError',
      message: 'SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2',
    });
    expect(m.allocate(pod('two', [guaranteed('2')]), [])).toBeUndefined();
    expect(m.exclusiveCpus('two', 'c0')).toEqual([1, 5]);
    // CPU 0 is reserved, so its sibling 4 is no whole core either: 2, 3, 6 and 7 are the free physical CPUs.
    expect(m.allocate(pod('six', [guaranteed('6')]), [pod('two', [])])).toEqual({
      reason: 'SMTAlignmentError',
      message:
        'SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 4, requested CPUs = 6, CPUs per core = 2',
    });
    expect(m.counts()).toMatchObject({
      pinningRequests: 3,
      pinningErrors: 2,
      // Upstream's container_aligned_compute_resources{boundary="physical_cpu"}: one allocation of whole cores, two
      // refused.
      physicalCpuAlignment: { aligned: 1, failed: 2 },
    });
  });

  it('checks the options as upstream: unknown names, gated levels, bad values; none takes none', () => {
    const make =
      (policy: 'none' | 'static', options: Record<string, string>, optionGates = { alpha: false, beta: true }) =>
      () =>
        new CpuManager({
          policy,
          stateFile: join(dir, 'opts'),
          topology: singleSocketHT,
          reservedMilli: 1000,
          options,
          optionGates,
        });
    expect(make('static', { 'full-pcups-only': 'true' })).toThrow(
      'new static policy error: unknown CPU Manager Policy option: "full-pcups-only"',
    );
    expect(make('static', { 'align-by-socket': 'true' })).toThrow(
      'new static policy error: CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided',
    );
    // full-pcpus-only is GA; strict-cpu-reservation beta (on by default).
    expect(make('static', { 'full-pcpus-only': 'true' }, { alpha: false, beta: false })).not.toThrow();
    expect(make('static', { 'strict-cpu-reservation': 'true' }, { alpha: false, beta: false })).toThrow(
      'CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided',
    );
    expect(make('static', { 'strict-cpu-reservation': 'true' })).not.toThrow();
    expect(
      make(
        'static',
        { 'full-pcpus-only': 'true', 'distribute-cpus-across-cores': 'true' },
        { alpha: true, beta: true },
      ),
    ).toThrow(
      'static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time',
    );
    expect(
      make('static', { 'prefer-align-cpus-by-uncorecache': 'true', 'distribute-cpus-across-numa': 'true' }),
    ).toThrow(
      'static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can not be used at the same time',
    );
    expect(make('static', { 'full-pcpus-only': 'yes' })).toThrow(
      'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax',
    );
    // Every v1.36 option is taken, the alpha ones with their gate.
    expect(make('static', { 'prefer-align-cpus-by-uncorecache': 'true' })).not.toThrow();
    for (const alpha of ['distribute-cpus-across-cores', 'align-by-socket'])
      expect(make('static', { [alpha]: 'true' }, { alpha: true, beta: true })).not.toThrow();
    expect(make('none', { 'full-pcpus-only': 'true' })).toThrow(
      'new none policy error: None policy: received unsupported options=map[full-pcpus-only:true]',
    );
  });

  it('none: keeps its state file and sets no cpuset', () => {
    const file = join(dir, 'none_state');
    const m = new CpuManager({ policy: 'none', stateFile: file, topology: singleSocketHT, reservedMilli: 0 });
    m.start();
    expect(m.containerCpuset('p', 'c')).toBeUndefined();
    expect(m.allocate(pod('g', [guaranteed('2')]), [])).toBeUndefined();
    expect(m.allocatableCpus()).toEqual([]);
  });

  it("reads this machine's topology from sysfs: every online CPU with a core, socket and its L3 cache's id", () => {
    const t = readCpuTopology();
    expect(t.size).toBeGreaterThan(0);
    for (const [cpu, info] of t) {
      const l3 = `/sys/devices/system/cpu/cpu${cpu}/cache/index3`;
      const l3Id = existsSync(`${l3}/id`) ? Number(readFileSync(`${l3}/id`, 'utf8')) : undefined;
      expect(info).toEqual({
        coreId: expect.any(Number),
        socketId: expect.any(Number),
        numaNodeId: expect.any(Number),
        ...(l3Id !== undefined ? { uncoreCacheId: l3Id } : {}),
      });
    }
  });

  it('reads the uncore (level-3) cache of each CPU, none when a CPU lists no level-3 cache', () => {
    const sys = join(dir, 'sys-cpu');
    for (const cpu of [0, 1]) {
      mkdirSync(join(sys, `cpu${cpu}`, 'topology'), { recursive: true });
      writeFileSync(join(sys, `cpu${cpu}`, 'topology', 'thread_siblings_list'), String(cpu));
      writeFileSync(join(sys, `cpu${cpu}`, 'topology', 'physical_package_id'), '0');
      for (const [index, level, id] of [['index2', '2', String(cpu)], ...(cpu === 0 ? [['index3', '3', '7']] : [])]) {
        mkdirSync(join(sys, `cpu${cpu}`, 'cache', index), { recursive: true });
        writeFileSync(join(sys, `cpu${cpu}`, 'cache', index, 'level'), level);
        writeFileSync(join(sys, `cpu${cpu}`, 'cache', index, 'id'), id);
      }
    }
    writeFileSync(join(sys, 'online'), '0-1');
    expect([...readCpuTopology(sys)]).toEqual([
      [0, { coreId: 0, socketId: 0, numaNodeId: 0, uncoreCacheId: 7 }],
      [1, { coreId: 1, socketId: 0, numaNodeId: 0 }],
    ]);
  });
});
