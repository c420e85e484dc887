/**
 * The systemd cgroup driver: the QoS and pod cgroups are transient slices of a real systemd (test/fixtures/systemd.ts,
 * PID 1 of its own namespaces with its own system bus), started with their settings as unit properties and as
 * files, updated through the unit, and stopped when the pod goes. Then what the properties are for: systemd puts a
 * slice's cgroup back to its unit's settings (here at a daemon-reload), which keeps the kubelet's values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { PodCgroupManager } from '../../../src/agent/cgroups/pod-cgroup-manager.js';
import {
  parentSlice,
  propertyVariants,
  resourceProperties,
  systemdUnits,
  unitObjectPath,
} from '../../../src/agent/cgroups/systemd-units.js';
import { findPodCgroups, removeOrphanedPodCgroups, removePodCgroup } from '../../../src/agent/gc/pod-cgroups.js';
import {
  podCgroupParent,
  podCgroupPath,
  podUidOfCgroup,
  qosCgroupPath,
  sliceCgroupPath,
} from '../../../src/agent/runtime/linux-resources.js';
import { canRunSystemd, startSystemd, type Systemd } from '../../fixtures/systemd.js';
import { useSystemBusAddress } from '../../fixtures/system-bus-address.js';

/** A path with the fixture's links resolved (the GC reports the hierarchies' real directories). */
const realPath = (path: string) => realpathSync(path);

const pod = (containers: Partial<Container>[], uid: string): Pod => ({
  metadata: { name: 'p', namespace: 'd', uid },
  spec: { containers: containers.map((c, i) => ({ name: `c${i}`, image: 'i', ...c })) },
});
const resources = (requests: Record<string, string>, limits: Record<string, string> = {}) => ({
  resources: { requests, limits },
});

describe('systemd units (pure)', () => {
  it('carries a cgroup config as v1 and v2 unit properties, as libcontainer: quota rounded up to whole percents', () => {
    const config = { cpuShares: 256, cpuQuota: 25_001, cpuPeriod: 100_000, memoryLimit: 2 ** 20, pidsLimit: -1 };
    expect(resourceProperties(config, 1)).toEqual([
      ['CPUShares', 't', '256'],
      ['MemoryLimit', 't', String(2 ** 20)],
      ['CPUQuotaPeriodUSec', 't', '100000'],
      ['CPUQuotaPerSecUSec', 't', '260000'],
      ['TasksMax', 't', '18446744073709551615'],
    ]);
    expect(resourceProperties({ cpuShares: 2, cpuQuota: -1, cpuPeriod: 100_000, memoryLimit: -1 }, 2)).toEqual([
      ['CPUWeight', 't', '1'],
      ['MemoryMax', 't', '18446744073709551615'],
      ['CPUQuotaPeriodUSec', 't', '100000'],
      ['CPUQuotaPerSecUSec', 't', '18446744073709551615'],
    ]);
    expect(resourceProperties({}, 1)).toEqual([]);
    expect(
      propertyVariants([
        ['Wants', 'as', ['-.slice']],
        ['DefaultDependencies', 'b', false],
      ]),
    ).toEqual([
      ['Wants', ['as', ['-.slice']]],
      ['DefaultDependencies', ['b', false]],
    ]);
  });

  it('names slices, their parents and their bus objects by systemd rules, and pod UIDs back from them', () => {
    expect(parentSlice('kubepods-burstable-poda_b.slice')).toBe('kubepods-burstable.slice');
    expect(parentSlice('kubepods.slice')).toBe('-.slice');
    expect(sliceCgroupPath('kubepods-besteffort.slice')).toBe('/kubepods.slice/kubepods-besteffort.slice');
    expect(unitObjectPath('kubepods-burstable.slice')).toBe(
      '/org/freedesktop/systemd1/unit/kubepods_2dburstable_2eslice',
    );
    expect(podUidOfCgroup('kubepods-burstable-pod12_ab.slice', 'systemd')).toBe('12-ab');
    expect(podUidOfCgroup('kubepods-pod12_ab.slice', 'systemd')).toBe('12-ab');
    expect(podUidOfCgroup('kubepods-burstable.slice', 'systemd')).toBeUndefined();
    expect(podUidOfCgroup('pod12-ab', 'cgroupfs')).toBe('12-ab');
    // A cgroup root other than / is the first name component of every slice (upstream CgroupName.ToSystemd).
    const underRoot = { cgroupsPerQOS: true, cgroupRoot: '/node-a', cgroupDriver: 'systemd' as const };
    expect(podCgroupParent(pod([{}], 'u-1'), underRoot)).toBe('node_a-kubepods-besteffort-podu_1.slice');
    expect(qosCgroupPath(underRoot, 'Burstable')).toBe(
      '/node_a.slice/node_a-kubepods.slice/node_a-kubepods-burstable.slice',
    );
    expect(podUidOfCgroup('node_a-kubepods-besteffort-podu_1.slice', 'systemd')).toBe('u-1');
  });
});

describe('without systemd', () => {
  it("fails a pod's cgroup with the bus's reason (the pod shows it as FailedCreatePodContainer), not a hang", async () => {
    const dir = mkdtempSync('/var/tmp/tsk-no-systemd-');
    const restoreBus = useSystemBusAddress(`unix:path=${join(dir, 'no-bus')}`);
    try {
      for (const c of ['cpu', 'memory', 'pids']) mkdirSync(join(dir, c), { recursive: true });
      for (const c of ['cpu', 'memory', 'pids']) writeFileSync(join(dir, c, 'cgroup.procs'), '');
      const m = new PodCgroupManager({
        cgroups: { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'systemd' },
        cpuCFSQuota: true,
        cpuCFSQuotaPeriodUs: 100_000,
        podPidsLimit: -1,
        fsRoot: dir,
        systemd: systemdUnits(),
      });
      await expect(m.ensure(pod([{}], 'x-1'))).rejects.toThrow(/system bus: .*ENOENT/);
      expect(existsSync(join(dir, 'cpu', 'kubepods.slice'))).toBe(false);
    } finally {
      restoreBus();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.runIf(canRunSystemd())('pod and QoS slices on a real systemd', () => {
  const dir = mkdtempSync('/var/tmp/tsk-systemd-cgroups-');
  const cgroups = { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'systemd' as const };
  let systemd: Systemd;
  let restoreBus = () => {};
  const read = (path: string) => readFileSync(join(systemd.cgroupFsRoot, path), 'utf8').trim();
  const manager = (activePods: () => Pod[] = () => []) =>
    new PodCgroupManager({
      cgroups,
      cpuCFSQuota: true,
      cpuCFSQuotaPeriodUs: 100_000,
      podPidsLimit: 64,
      fsRoot: systemd.cgroupFsRoot,
      activePods,
      systemd: systemdUnits(),
    });
  const naming = () => ({ cgroupRoot: '/', cgroupDriver: 'systemd' as const, systemd: systemdUnits() });

  beforeAll(async () => {
    systemd = await startSystemd(dir, `tsk-systemd-cgroups-${process.pid}`);
    // The kubelet's calls reach this systemd's bus, as any D-Bus client's would.
    restoreBus = useSystemBusAddress(systemd.busAddress);
  }, 30_000);

  afterAll(async () => {
    restoreBus();
    await systemd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts the QoS slices with their settings as unit properties; they survive a daemon-reload', async () => {
    await manager().ensureQosCgroups({ cpuMilli: 1500, memoryBytes: 2 ** 30 });
    for (const slice of ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-besteffort.slice'])
      expect([slice, systemd.property(slice, 'ActiveState')]).toEqual([slice, 'active']);
    expect(systemd.property('kubepods.slice', 'CPUShares')).toBe('1536');
    expect(systemd.property('kubepods.slice', 'MemoryLimit')).toBe(String(2 ** 30));
    expect(systemd.property('kubepods-besteffort.slice', 'CPUShares')).toBe('2');
    expect(systemd.property('kubepods-burstable.slice', 'Wants')).toBe('kubepods.slice');
    expect(read('cpu/kubepods.slice/cpu.shares')).toBe('1536');
    expect(read('memory/kubepods.slice/memory.limit_in_bytes')).toBe(String(2 ** 30));
    expect(read('cpu/kubepods.slice/kubepods-besteffort.slice/cpu.shares')).toBe('2');
    // systemd applies a slice's unit settings to its cgroup again (here at a reload): values written only to the
    // files would be reset to its defaults (1024 shares, no memory limit).
    writeFileSync(join(systemd.cgroupFsRoot, 'cpu/kubepods.slice/cpu.shares'), '777');
    systemd.systemctl(['daemon-reload']);
    expect(read('cpu/kubepods.slice/cpu.shares')).toBe('1536');
    expect(read('memory/kubepods.slice/memory.limit_in_bytes')).toBe(String(2 ** 30));
  });

  it("starts a pod's slice with its limits before its sandbox, updates the Burstable class and a resize, and stops it when the pod goes", async () => {
    const burstable = pod([resources({ cpu: '250m', memory: '64Mi' }, { cpu: '500m', memory: '128Mi' })], 'b-1');
    const m = manager(() => [burstable]);
    await m.ensureQosCgroups();
    await m.ensure(burstable);
    const slice = 'kubepods-burstable-podb_1.slice';
    expect(podCgroupPath(burstable, cgroups)).toBe(`/kubepods.slice/kubepods-burstable.slice/${slice}`);
    expect(systemd.property(slice, 'ActiveState')).toBe('active');
    expect(systemd.property(slice, 'CPUShares')).toBe('256');
    expect(systemd.property(slice, 'CPUQuotaPerSecUSec')).toBe('500ms');
    expect(systemd.property(slice, 'MemoryLimit')).toBe(String(128 * 2 ** 20));
    expect(systemd.property(slice, 'TasksMax')).toBe('64');
    const podDir = `kubepods.slice/kubepods-burstable.slice/${slice}`;
    expect(read(`cpu/${podDir}/cpu.cfs_quota_us`)).toBe('50000');
    expect(read(`memory/${podDir}/memory.limit_in_bytes`)).toBe(String(128 * 2 ** 20));
    expect(read(`pids/${podDir}/pids.max`)).toBe('64');
    // The Burstable class's shares follow its pods' requests, set before the pod's slice.
    expect(systemd.property('kubepods-burstable.slice', 'CPUShares')).toBe('256');
    expect(read('cpu/kubepods.slice/kubepods-burstable.slice/cpu.shares')).toBe('256');
    // A resize sets the unit's properties and files.
    const resized = pod([resources({ cpu: '250m', memory: '64Mi' }, { cpu: '1', memory: '256Mi' })], 'b-1');
    await m.resize(resized);
    expect(systemd.property(slice, 'CPUQuotaPerSecUSec')).toBe('1s');
    expect(systemd.property(slice, 'MemoryLimit')).toBe(String(256 * 2 ** 20));
    expect(read(`memory/${podDir}/memory.limit_in_bytes`)).toBe(String(256 * 2 ** 20));
    // The GC finds it by UID; its removal stops the unit and leaves no directory.
    expect(findPodCgroups(systemd.cgroupFsRoot, naming()).get('b-1')).toEqual(
      expect.arrayContaining(['cpu', 'memory', 'pids'].map((c) => join(systemd.cgroupFsRoot, c, podDir)).map(realPath)),
    );
    await removePodCgroup(systemd.cgroupFsRoot, 'b-1', naming());
    expect(systemd.property(slice, 'ActiveState')).toBe('inactive');
    expect(existsSync(join(systemd.cgroupFsRoot, 'cpu', podDir))).toBe(false);
    expect(findPodCgroups(systemd.cgroupFsRoot, naming()).has('b-1')).toBe(false);
  });

  it("caps an existing reserved cgroup (systemReservedCgroup /system.slice) through its unit's properties", async () => {
    expect(systemd.property('system.slice', 'ActiveState')).toBe('active');
    await manager().enforceExisting('/system.slice', { cpuShares: 512, memoryLimit: 256 * 2 ** 20 });
    expect(systemd.property('system.slice', 'CPUShares')).toBe('512');
    expect(systemd.property('system.slice', 'MemoryLimit')).toBe(String(256 * 2 ** 20));
    expect(read('memory/system.slice/memory.limit_in_bytes')).toBe(String(256 * 2 ** 20));
    await expect(manager().enforceExisting('/no-such.slice', { cpuShares: 512 })).rejects.toThrow(
      '"/no-such.slice" cgroup does not exist',
    );
  });

  it('sweeps the slices of pods gone (a Guaranteed and a BestEffort one), keeping a live pod’s', async () => {
    const guaranteed = pod([resources({ cpu: '100m', memory: '16Mi' }, { cpu: '100m', memory: '16Mi' })], 'g-1');
    const bestEffort = pod([{}], 'e-1');
    const live = pod([{}], 'e-2');
    const m = manager();
    for (const p of [guaranteed, bestEffort, live]) await m.ensure(p);
    expect(systemd.property('kubepods-podg_1.slice', 'CPUQuotaPerSecUSec')).toBe('100ms');
    expect(systemd.property('kubepods-besteffort-pode_1.slice', 'ActiveState')).toBe('active');
    const removed = await removeOrphanedPodCgroups(systemd.cgroupFsRoot, (uid) => uid === 'e-2', naming());
    expect(removed.map((r) => r.uid).sort()).toEqual(['e-1', 'g-1']);
    expect(systemd.property('kubepods-podg_1.slice', 'ActiveState')).toBe('inactive');
    expect(systemd.property('kubepods-besteffort-pode_1.slice', 'ActiveState')).toBe('inactive');
    expect(systemd.property('kubepods-besteffort-pode_2.slice', 'ActiveState')).toBe('active');
    expect([...findPodCgroups(systemd.cgroupFsRoot, naming()).keys()]).toEqual(['e-2']);
  });
});
