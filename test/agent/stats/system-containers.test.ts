/**
 * System containers from cgroups: /proc/<pid>/cgroup parsed for v1 and v2, the root cgroup never
 * taken for the kubelet's own, the kubepods cgroup found under the cgroup root, and a usage read
 * from v1 and v2 files (fixture trees) as cAdvisor computes it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCgroupUsage } from '../../../src/lib/cgroup-usage.js';
import { cgroupDirs, detectCgroupLayout, ownCgroupDirs, parseProcCgroup, qosCgroupDirs } from '../../../src/agent/stats/system-containers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-sysc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(dir, 't-'));
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(root, p, '..'), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

describe('system containers from cgroups', () => {
  it('parses /proc/<pid>/cgroup (v1 with joined controllers, v2)', () => {
    expect(parseProcCgroup('12:pids:/x\n4:memory:/kubelet.slice\n2:cpu,cpuacct:/kubelet.slice\n0::/\n')).toEqual({
      cpuacct: '/kubelet.slice',
      memory: '/kubelet.slice',
      unified: '/',
    });
    expect(parseProcCgroup('0::/system.slice/kubelet.service\n')).toEqual({ unified: '/system.slice/kubelet.service' });
  });

  it("takes the kubelet's own cgroup, never a root one", () => {
    const v2 = { version: 2 as const, root: '/sys/fs/cgroup' };
    const v1 = { version: 1 as const, cpuacct: '/c/cpuacct', memory: '/c/memory' };
    expect(ownCgroupDirs(v2, '0::/system.slice/kubelet.service\n')).toEqual({ version: 2, dir: '/sys/fs/cgroup/system.slice/kubelet.service' });
    expect(ownCgroupDirs(v2, '0::/\n')).toBeUndefined();
    expect(ownCgroupDirs(v1, '4:memory:/k\n3:cpuacct:/k\n')).toEqual({ version: 1, cpuDir: '/c/cpuacct/k', memoryDir: '/c/memory/k' });
    // cpuacct at the root would be the whole machine's CPU.
    expect(ownCgroupDirs(v1, '4:memory:/k\n3:cpuacct:/\n')).toBeUndefined();
  });

  it('detects v1 and v2 layouts and finds kubepods under the cgroup root (cgroupfs and systemd names)', () => {
    const v1root = tree({
      'cpuacct/cpuacct.usage': '1',
      'memory/memory.usage_in_bytes': '1',
      'memory/r/kubepods/memory.stat': '',
      'memory/r/kubepods/besteffort/memory.stat': '',
    });
    const v1 = detectCgroupLayout(v1root)!;
    expect(v1).toEqual({ version: 1, cpuacct: join(v1root, 'cpuacct'), memory: join(v1root, 'memory') });
    const ctx = { cgroupsPerQOS: true, cgroupRoot: '/r', cgroupDriver: 'cgroupfs' } as const;
    expect(qosCgroupDirs(v1, ctx)).toEqual({ pods: cgroupDirs(v1, '/r/kubepods'), burstable: undefined, besteffort: cgroupDirs(v1, '/r/kubepods/besteffort') });
    expect(qosCgroupDirs(v1, { ...ctx, cgroupRoot: '/' })).toEqual({ pods: undefined, burstable: undefined, besteffort: undefined });
    expect(qosCgroupDirs(v1, { ...ctx, cgroupsPerQOS: false })).toEqual({});
    const v2root = tree({
      'cgroup.controllers': 'cpu memory',
      'kubepods.slice/memory.current': '5',
      'kubepods.slice/kubepods-burstable.slice/memory.current': '4',
    });
    const v2 = detectCgroupLayout(v2root)!;
    expect(v2).toEqual({ version: 2, root: v2root });
    expect(qosCgroupDirs(v2, { ...ctx, cgroupRoot: '/', cgroupDriver: 'systemd' })).toEqual({
      pods: { version: 2, dir: join(v2root, 'kubepods.slice') },
      burstable: { version: 2, dir: join(v2root, 'kubepods.slice/kubepods-burstable.slice') },
      besteffort: undefined,
    });
    expect(detectCgroupLayout(join(dir, 'nothing'))).toBeUndefined();
  });

  it('reads usage as cAdvisor: v1 and v2, with page faults and the memory limit', () => {
    const r1 = tree({
      'm/memory.usage_in_bytes': '10000000\n',
      'm/memory.stat': 'cache 5\ntotal_rss 3000000\ntotal_inactive_file 4000000\ntotal_pgfault 5000\ntotal_pgmajfault 7\n',
      'm/memory.limit_in_bytes': '9223372036854771712\n',
      'c/cpuacct.usage': '123456789\n',
    });
    expect(readCgroupUsage({ version: 1, cpuDir: join(r1, 'c'), memoryDir: join(r1, 'm') })).toEqual({
      cpuNs: 123456789,
      memoryUsageBytes: 10000000,
      workingSetBytes: 6000000,
      rssBytes: 3000000,
      pageFaults: 5000,
      majorPageFaults: 7,
      limitBytes: undefined,
    });
    const r2 = tree({
      'cpu.stat': 'usage_usec 2500\n',
      'memory.current': '8192000\n',
      'memory.stat': 'anon 4096000\ninactive_file 1024000\npgfault 900\npgmajfault 1\n',
      'memory.max': '80000000\n',
    });
    expect(readCgroupUsage({ version: 2, dir: r2 })).toEqual({
      cpuNs: 2_500_000,
      memoryUsageBytes: 8192000,
      workingSetBytes: 7168000,
      rssBytes: 4096000,
      pageFaults: 900,
      majorPageFaults: 1,
      limitBytes: 80000000,
    });
    // Swap, where the kernel accounts it: v2's own files; v1's memory+swap less memory.
    writeFileSync(join(r2, 'memory.swap.current'), '4096\n');
    writeFileSync(join(r2, 'memory.swap.max'), '1048576\n');
    expect(readCgroupUsage({ version: 2, dir: r2 })).toMatchObject({ swapUsageBytes: 4096, swapLimitBytes: 1048576 });
    writeFileSync(join(r1, 'm/memory.memsw.usage_in_bytes'), '10008192\n');
    writeFileSync(join(r1, 'm/memory.memsw.limit_in_bytes'), '9223372036854771712\n');
    expect(readCgroupUsage({ version: 1, cpuDir: join(r1, 'c'), memoryDir: join(r1, 'm') })).toMatchObject({ swapUsageBytes: 8192, swapLimitBytes: undefined });
    writeFileSync(join(r2, 'memory.max'), 'max\n');
    expect(readCgroupUsage({ version: 2, dir: r2 })?.limitBytes).toBeUndefined();
    rmSync(join(r2, 'memory.max'));
    expect(readCgroupUsage({ version: 2, dir: r2 })?.limitBytes).toBeUndefined();
    expect(readCgroupUsage({ version: 2, dir: join(dir, 'missing') })).toBeUndefined();
  });
});
