/**
 * Pod-level cgroup settings as upstream's ResourceConfigForPod, their files under cgroup v1 and
 * v2, and the manager writing them (against a directory laid out as each cgroup version mounts
 * its hierarchies; the real v1 hierarchy is exercised by the containerd suite).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../../src/api/types.js';
import {
  nodeAllocatableAbsolute,
  podLimits,
  reservedCgroupLimits,
  resourceConfigForPod,
} from '../../../src/agent/cgroups/pod-resource-config.js';
import { cgroupWrites, cpuSharesToWeight } from '../../../src/lib/cgroup-limits.js';
import { PodCgroupManager } from '../../../src/agent/cgroups/pod-cgroup-manager.js';
import { nodeAllocatableFor } from '../../../src/agent/compose-runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-podcg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pod = (containers: Partial<Container>[], extra: Partial<Pod['spec']> = {}, uid = 'u1'): Pod => ({
  metadata: { name: 'p', namespace: 'd', uid },
  spec: { containers: containers.map((c, i) => ({ name: `c${i}`, image: 'i', ...c })), ...extra },
});
const res = (requests: Record<string, string>, limits: Record<string, string> = {}) => ({
  resources: { requests, limits },
});
const o = { enforceCpuLimits: true, cpuPeriodUs: 100_000, podPidsLimit: -1 };

describe('pod resource config', () => {
  it('Guaranteed: shares, quota and memory limit of the whole pod', () => {
    const g = { cpu: '100m', memory: '100Mi' };
    expect(resourceConfigForPod(pod([res(g, g), res(g, g)]), o)).toEqual({
      cpuShares: 204,
      cpuQuota: 20_000,
      cpuPeriod: 100_000,
      memoryLimit: 200 * 2 ** 20,
    });
    expect(resourceConfigForPod(pod([res(g, g)]), { ...o, enforceCpuLimits: false }).cpuQuota).toBe(-1);
  });
  it('Burstable: a quota or memory limit only when every container declares it; pids limit when set', () => {
    const both = pod([res({ cpu: '100m' }, { cpu: '200m', memory: '64Mi' }), res({ cpu: '100m' }, { cpu: '300m' })]);
    expect(resourceConfigForPod(both, { ...o, podPidsLimit: 100 })).toEqual({
      cpuShares: 204,
      cpuQuota: 50_000,
      cpuPeriod: 100_000,
      pidsLimit: 100,
    });
    expect(resourceConfigForPod(pod([res({ memory: '10Mi' })]), o)).toEqual({ cpuShares: 2 });
  });
  it('BestEffort: the minimum shares', () => {
    expect(resourceConfigForPod(pod([{}]), o)).toEqual({ cpuShares: 2 });
  });
  it('limits count init containers (the largest) and sidecars (added), and the overhead', () => {
    const p = pod([res({}, { cpu: '100m', memory: '10Mi' })], {
      initContainers: [
        { name: 'i', image: 'i', ...res({}, { cpu: '500m', memory: '5Mi' }) },
        { name: 's', image: 'i', restartPolicy: 'Always', ...res({}, { cpu: '50m', memory: '20Mi' }) },
      ],
      overhead: { cpu: '10m', memory: '1Mi' },
    });
    expect(podLimits(p)).toEqual({ cpuMilli: 510, memoryBytes: 31 * 2 ** 20, cpuDeclared: true, memoryDeclared: true });
  });
  it('writes v1 files per controller and v2 files in the unified hierarchy', () => {
    const c = { cpuShares: 1024, cpuQuota: -1, cpuPeriod: 100_000, memoryLimit: 1000, pidsLimit: 5 };
    expect(cgroupWrites(c, 1)).toEqual([
      { controller: 'cpu', file: 'cpu.shares', value: '1024' },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '-1' },
      { controller: 'memory', file: 'memory.limit_in_bytes', value: '1000' },
      { controller: 'pids', file: 'pids.max', value: '5' },
    ]);
    expect(cgroupWrites({ ...c, cpuQuota: 50_000 }, 2)).toEqual([
      { controller: '', file: 'cpu.weight', value: '39' },
      { controller: '', file: 'cpu.max', value: '50000 100000' },
      { controller: '', file: 'memory.max', value: '1000' },
      { controller: '', file: 'pids.max', value: '5' },
    ]);
    expect(cgroupWrites({ cpuQuota: -1, cpuPeriod: 100_000 }, 2)).toEqual([
      { controller: '', file: 'cpu.max', value: 'max 100000' },
    ]);
    expect([cpuSharesToWeight(2), cpuSharesToWeight(1024), cpuSharesToWeight(262144)]).toEqual([1, 39, 10000]);
  });
  it('node allocatable for enforcement: capacity − kube- and system-reserved, never below 0', () => {
    expect(
      nodeAllocatableAbsolute({ cpuMilli: 4000, memoryBytes: 8 * 2 ** 30 }, [
        { cpu: '500m', memory: '1Gi' },
        { memory: '1Gi' },
      ]),
    ).toEqual({
      cpuMilli: 3500,
      memoryBytes: 6 * 2 ** 30,
    });
    expect(nodeAllocatableAbsolute({ cpuMilli: 1000, memoryBytes: 1 }, [{ cpu: '2' }]).cpuMilli).toBe(0);
  });

  it("kubepods' cap: allocatable huge pages are each pool less what is reserved of it; the capacity without 'pods'", () => {
    const machine = { cpuCores: 2, memoryBytes: 4 * 2 ** 30, hugePages: [{ pageSizeKb: 2048, pages: 10 }] };
    const node = { kubeReserved: { 'hugepages-2Mi': '4Mi', cpu: '500m' }, systemReserved: {} };
    expect(nodeAllocatableFor({ node }, machine)).toEqual({
      cpuMilli: 1500,
      memoryBytes: 4 * 2 ** 30,
      hugePageBytes: { 'hugepages-2Mi': 16 * 2 ** 20 },
    });
    expect(nodeAllocatableFor({ node, enforceNodeAllocatable: ['system-reserved'] }, machine)).toEqual({
      cpuMilli: 2000,
      memoryBytes: 4 * 2 ** 30,
      hugePageBytes: { 'hugepages-2Mi': 20 * 2 ** 20 },
    });
  });
});

describe('pod cgroup manager', () => {
  const cgroups = { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' as const };
  const deps = { cgroups, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000, podPidsLimit: 64 };
  const read = (p: string) => readFileSync(p, 'utf8');
  /** A directory laid out as cgroup v1 mounts `controllers`, each hierarchy's root with its cgroup.procs. */
  const v1Root = (name: string, controllers: string[]) => {
    const root = join(dir, name);
    for (const c of controllers) {
      mkdirSync(join(root, c), { recursive: true });
      writeFileSync(join(root, c, 'cgroup.procs'), '');
    }
    return root;
  };

  it('v1: makes the QoS and pod cgroups in each hierarchy with their settings; leaves an existing pod cgroup alone', async () => {
    const root = v1Root('v1', ['cpu', 'cpuacct', 'memory', 'pids']);
    const m = new PodCgroupManager({ ...deps, fsRoot: root });
    await m.ensureQosCgroups({ cpuMilli: 2000, memoryBytes: 4096 });
    expect([
      read(join(root, 'cpu/kubepods/cpu.shares')),
      read(join(root, 'memory/kubepods/memory.limit_in_bytes')),
    ]).toEqual(['2048', '4096']);
    expect(read(join(root, 'cpu/kubepods/besteffort/cpu.shares'))).toBe('2');
    expect(existsSync(join(root, 'pids/kubepods/burstable'))).toBe(true);
    const g = { cpu: '250m', memory: '1Mi' };
    await m.ensure(pod([res(g, g)], {}, 'g1'));
    expect(read(join(root, 'cpu/kubepods/podg1/cpu.shares'))).toBe('256');
    expect(read(join(root, 'cpu/kubepods/podg1/cpu.cfs_quota_us'))).toBe('25000');
    expect(read(join(root, 'memory/kubepods/podg1/memory.limit_in_bytes'))).toBe(String(2 ** 20));
    expect(read(join(root, 'pids/kubepods/podg1/pids.max'))).toBe('64');
    expect(existsSync(join(root, 'cpuacct/kubepods/podg1'))).toBe(true);
    writeFileSync(join(root, 'cpu/kubepods/podg1/cpu.shares'), '999');
    await m.ensure(pod([res(g, g)], {}, 'g1'));
    expect(read(join(root, 'cpu/kubepods/podg1/cpu.shares'))).toBe('999');
  });

  it('a pod holding exclusive CPUs gets no CFS quota (DisableCPUQuotaWithExclusiveCPUs); another keeps its quota', async () => {
    const root = v1Root('v1-exclusive', ['cpu', 'cpuacct', 'memory', 'pids']);
    const m = new PodCgroupManager({ ...deps, fsRoot: root, exclusiveCpus: (uid) => uid === 'pinned' });
    await m.ensureQosCgroups({ cpuMilli: 4000, memoryBytes: 8 << 30 });
    const g = { cpu: '2', memory: '1Mi' };
    await m.ensure(pod([res(g, g)], {}, 'pinned'));
    await m.ensure(pod([res(g, g)], {}, 'shared'));
    expect(read(join(root, 'cpu/kubepods/podpinned/cpu.cfs_quota_us'))).toBe('-1');
    expect(read(join(root, 'cpu/kubepods/podshared/cpu.cfs_quota_us'))).toBe('200000');
  });

  it("the Burstable class gets the shares of its pods' CPU requests, set before each new pod cgroup", async () => {
    const root = v1Root('qos', ['cpu', 'memory']);
    const g = { cpu: '1', memory: '1Mi' };
    let pods = [pod([res({ cpu: '100m' })], {}, 'b1'), pod([res(g, g)], {}, 'g1'), pod([{}], {}, 'e1')];
    const m = new PodCgroupManager({ ...deps, fsRoot: root, activePods: () => pods });
    await m.ensure(pods[0]);
    expect(read(join(root, 'cpu/kubepods/burstable/cpu.shares'))).toBe('102');
    expect(read(join(root, 'cpu/kubepods/besteffort/cpu.shares'))).toBe('2');
    pods = [...pods, pod([res({ cpu: '300m' }), res({ memory: '1Mi' })], {}, 'b2')];
    await m.ensure(pods[3]);
    expect(read(join(root, 'cpu/kubepods/burstable/cpu.shares'))).toBe('409');
    pods = pods.slice(1);
    await m.updateQosCgroups();
    expect(read(join(root, 'cpu/kubepods/burstable/cpu.shares'))).toBe('307');
  });

  it('a new pod rewrites only QoS shares that changed, the periodic update all of them; a QoS cgroup that is gone is made again', async () => {
    const root = v1Root('qos-writes', ['cpu', 'memory']);
    const pods = [pod([{}], {}, 'e1'), pod([{}], {}, 'e2'), pod([{}], {}, 'e3')];
    const m = new PodCgroupManager({ ...deps, fsRoot: root, activePods: () => pods });
    await m.ensureQosCgroups();
    await m.ensure(pods[0]);
    writeFileSync(join(root, 'cpu/kubepods/besteffort/cpu.shares'), '7');
    writeFileSync(join(root, 'cpu/kubepods/burstable/cpu.shares'), '7');
    await m.ensure(pods[1]);
    expect(existsSync(join(root, 'cpu/kubepods/besteffort/pode2'))).toBe(true);
    expect(read(join(root, 'cpu/kubepods/besteffort/cpu.shares'))).toBe('7');
    expect(read(join(root, 'cpu/kubepods/burstable/cpu.shares'))).toBe('7');
    await m.updateQosCgroups();
    expect(read(join(root, 'cpu/kubepods/besteffort/cpu.shares'))).toBe('2');
    expect(read(join(root, 'cpu/kubepods/burstable/cpu.shares'))).toBe('2');
    for (const c of ['cpu', 'memory']) rmSync(join(root, c, 'kubepods/besteffort'), { recursive: true });
    await m.ensure(pods[2]);
    expect(read(join(root, 'cpu/kubepods/besteffort/pode3/cpu.shares'))).toBe('2');
    expect(existsSync(join(root, 'memory/kubepods/besteffort/pode3'))).toBe(true);
    expect(read(join(root, 'cpu/kubepods/besteffort/cpu.shares'))).toBe('2');
  });

  it('pods ensured at once write a changed QoS share once, not once per pod', async () => {
    const root = v1Root('qos-burst', ['cpu', 'memory']);
    const pods = Array.from({ length: 20 }, (_, i) => pod([{}], {}, `e${i}`));
    const ops: string[] = [];
    const m = new PodCgroupManager({ ...deps, fsRoot: root, activePods: () => pods, observe: (op) => ops.push(op) });
    await m.ensureQosCgroups();
    ops.length = 0;
    await Promise.all(pods.map((p) => m.ensure(p)));
    // The Burstable class's shares were never written by a pod before: once, for the first.
    expect(ops.filter((o) => o === 'update')).toHaveLength(1);
    expect(ops.filter((o) => o === 'create')).toHaveLength(20);
    expect(read(join(root, 'cpu/kubepods/burstable/cpu.shares'))).toBe('2');
  });

  it("counts a 'create' only for a pod cgroup that was missing (upstream EnsureExists)", async () => {
    const root = v1Root('ops', ['cpu', 'memory']);
    const ops: string[] = [];
    const m = new PodCgroupManager({ ...deps, fsRoot: root, observe: (op) => ops.push(op) });
    await m.ensureQosCgroups();
    ops.length = 0;
    await m.ensure(pod([{}], {}, 'x1'));
    expect(ops.filter((o) => o === 'create')).toHaveLength(1);
    await m.ensure(pod([{}], {}, 'x1'));
    expect(ops.filter((o) => o === 'create')).toHaveLength(1);
  });

  it('v2: one unified hierarchy, controllers enabled on the way down', async () => {
    const root = join(dir, 'v2');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids');
    const m = new PodCgroupManager({ ...deps, fsRoot: root });
    await m.ensure(pod([{}], {}, 'b1'));
    expect(read(join(root, 'kubepods/besteffort/podb1/cpu.weight'))).toBe('1');
    expect(read(join(root, 'kubepods/besteffort/podb1/pids.max'))).toBe('64');
    for (const d of ['', 'kubepods', 'kubepods/besteffort'])
      expect(read(join(root, d, 'cgroup.subtree_control'))).toBe('+cpu +memory +pids');
  });

  it('hugetlb (where the kernel has it): a pod gets what it requests of each page size and 0 of the others, the QoS tiers every size unbounded, kubepods the allocatable', async () => {
    const sizes = { hugePageSizesKb: [2048, 1048576] };
    const root = v1Root('hugetlb', ['cpu', 'memory', 'hugetlb']);
    const m = new PodCgroupManager({ ...deps, ...sizes, fsRoot: root });
    await m.ensureQosCgroups({ cpuMilli: 2000, memoryBytes: 4096, hugePageBytes: { 'hugepages-2Mi': 8 * 2 ** 20 } });
    const limit = (cgroup: string, size: string) =>
      read(join(root, 'hugetlb', cgroup, `hugetlb.${size}.limit_in_bytes`));
    expect([limit('kubepods', '2MB'), limit('kubepods', '1GB')]).toEqual([String(8 * 2 ** 20), '0']);
    for (const tier of ['kubepods/burstable', 'kubepods/besteffort'])
      expect([limit(tier, '2MB'), limit(tier, '1GB')]).toEqual(['4611686018427387904', '4611686018427387904']);
    const huge = { cpu: '100m', memory: '16Mi', 'hugepages-2Mi': '4Mi' };
    await m.ensure(pod([res(huge, huge)], {}, 'h1'));
    expect([limit('kubepods/podh1', '2MB'), limit('kubepods/podh1', '1GB')]).toEqual([String(4 * 2 ** 20), '0']);
    await m.ensure(pod([{}], {}, 'h2'));
    expect([limit('kubepods/besteffort/podh2', '2MB'), limit('kubepods/besteffort/podh2', '1GB')]).toEqual(['0', '0']);
    // The periodic update keeps the tiers unbounded.
    writeFileSync(join(root, 'hugetlb', 'kubepods/burstable', 'hugetlb.2MB.limit_in_bytes'), '0');
    await m.updateQosCgroups();
    expect(limit('kubepods/burstable', '2MB')).toBe('4611686018427387904');
    // Without the controller nothing of it is written, and nothing fails.
    const without = v1Root('no-hugetlb', ['cpu', 'memory']);
    await new PodCgroupManager({ ...deps, ...sizes, fsRoot: without }).ensure(pod([res(huge, huge)], {}, 'h3'));
    expect(read(join(without, 'memory/kubepods/podh3/memory.limit_in_bytes'))).toBe(String(16 * 2 ** 20));
  });

  it('v2: hugetlb limits in the unified hierarchy when cgroup.controllers has it, enabled on the way down', async () => {
    const root = join(dir, 'v2-hugetlb');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids hugetlb');
    const m = new PodCgroupManager({ ...deps, hugePageSizesKb: [2048], fsRoot: root });
    await m.ensure(pod([{}], {}, 'b2'));
    expect(read(join(root, 'kubepods/besteffort/podb2/hugetlb.2MB.max'))).toBe('0');
    expect(read(join(root, 'kubepods/cgroup.subtree_control'))).toBe('+cpu +memory +pids +hugetlb');
  });

  it('a setting that cannot be written fails the pod cgroup, naming the file', async () => {
    const root = v1Root('bad', ['cpu', 'memory']);
    // A directory where cpu.shares goes; the memory side is still missing, so the pod cgroup is made.
    mkdirSync(join(root, 'cpu', 'kubepods', 'besteffort', 'podz', 'cpu.shares'), { recursive: true });
    const m = new PodCgroupManager({ ...deps, fsRoot: root });
    await expect(m.ensure(pod([{}], {}, 'z'))).rejects.toThrow(
      /^failed to set cpu\.shares of \/kubepods\/besteffort\/podz to 2: EISDIR/,
    );
  });

  it('enforceNodeAllocatable system-reserved / kube-reserved: the existing cgroup gets shares, memory and pids; a missing one is an error', async () => {
    const root = join(dir, 'reserved');
    for (const c of ['cpu', 'memory', 'pids']) {
      mkdirSync(join(root, c, 'system.slice'), { recursive: true });
      writeFileSync(join(root, c, 'cgroup.procs'), '');
    }
    const m = new PodCgroupManager({ ...deps, fsRoot: root });
    const [sys, kube] = reservedCgroupLimits(['pods', 'system-reserved', 'kube-reserved-compressible'], {
      cgroups: { system: '/system.slice', kube: '/kube.slice' },
      systemReserved: { cpu: '500m', memory: '100Mi', pid: '1000' },
      kubeReserved: { cpu: '1', memory: '1Gi' },
    });
    expect(sys).toEqual({
      who: 'system',
      cgroup: '/system.slice',
      config: { cpuShares: 512, memoryLimit: 100 * 2 ** 20, pidsLimit: 1000 },
    });
    // The compressible key caps the CPU only.
    expect(kube).toEqual({ who: 'kube', cgroup: '/kube.slice', config: { cpuShares: 1024 } });
    await m.enforceExisting(sys.cgroup, sys.config);
    expect(
      ['cpu/system.slice/cpu.shares', 'memory/system.slice/memory.limit_in_bytes', 'pids/system.slice/pids.max'].map(
        (f) => read(join(root, f)),
      ),
    ).toEqual(['512', String(100 * 2 ** 20), '1000']);
    await expect(m.enforceExisting(kube.cgroup, kube.config)).rejects.toThrow('"/kube.slice" cgroup does not exist');
    expect(reservedCgroupLimits(['pods'], { cgroups: { system: '/s', kube: '/k' } })).toEqual([]);
  });
});
