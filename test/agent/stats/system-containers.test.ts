/**
 * System containers from cgroups: /proc/<pid>/cgroup parsed for v1 and v2, the root cgroup never
 * taken for the kubelet's own, the kubepods cgroup found under the cgroup root, and a usage read
 * from v1 and v2 files (fixture trees) as cAdvisor computes it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flatKeyedValue, readCgroupDetail, readCgroupUsage } from '../../../src/lib/cgroup-usage.js';
import {
  cgroupDirs,
  detectCgroupLayout,
  ownCgroupDirs,
  parseProcCgroup,
  qosCgroupDirs,
} from '../../../src/agent/stats/system-containers.js';

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
    expect(ownCgroupDirs(v2, '0::/system.slice/kubelet.service\n')).toEqual({
      version: 2,
      dir: '/sys/fs/cgroup/system.slice/kubelet.service',
    });
    expect(ownCgroupDirs(v2, '0::/\n')).toBeUndefined();
    expect(ownCgroupDirs(v1, '4:memory:/k\n3:cpuacct:/k\n')).toEqual({
      version: 1,
      cpuDir: '/c/cpuacct/k',
      memoryDir: '/c/memory/k',
    });
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
    expect(qosCgroupDirs(v1, ctx)).toEqual({
      pods: cgroupDirs(v1, '/r/kubepods'),
      burstable: undefined,
      besteffort: cgroupDirs(v1, '/r/kubepods/besteffort'),
    });
    expect(qosCgroupDirs(v1, { ...ctx, cgroupRoot: '/' })).toEqual({
      pods: undefined,
      burstable: undefined,
      besteffort: undefined,
    });
    expect(qosCgroupDirs(v1, { ...ctx, cgroupsPerQOS: false })).toEqual({});
    // With the blkio hierarchy mounted, a cgroup's I/O is read there too.
    const blkioRoot = tree({
      'cpuacct/cpuacct.usage': '1',
      'memory/memory.usage_in_bytes': '1',
      'blkio/blkio.throttle.io_serviced': '',
    });
    expect(cgroupDirs(detectCgroupLayout(blkioRoot)!, '/k/c1')).toMatchObject({
      version: 1,
      blkioDir: join(blkioRoot, 'blkio/k/c1'),
    });
    expect(cgroupDirs(v1, '/k/c1')).not.toHaveProperty('blkioDir');
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
      'm/memory.stat':
        'cache 5\ntotal_rss 3000000\ntotal_inactive_file 4000000\ntotal_pgfault 5000\ntotal_pgmajfault 7\n',
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
    const v2Usage = {
      cpuNs: 2_500_000,
      memoryUsageBytes: 8192000,
      workingSetBytes: 7168000,
      rssBytes: 4096000,
      pageFaults: 900,
      majorPageFaults: 1,
    };
    expect(readCgroupUsage({ version: 2, dir: r2 })).toEqual({ ...v2Usage, limitBytes: 80000000 });
    // Swap, where the kernel accounts it: v2's own files; v1's memory+swap less memory.
    writeFileSync(join(r2, 'memory.swap.current'), '4096\n');
    writeFileSync(join(r2, 'memory.swap.max'), '1048576\n');
    expect(readCgroupUsage({ version: 2, dir: r2 })).toMatchObject({ swapBytes: 4096, swapLimitBytes: 1048576 });
    writeFileSync(join(r1, 'm/memory.memsw.usage_in_bytes'), '10008192\n');
    writeFileSync(join(r1, 'm/memory.memsw.limit_in_bytes'), '9223372036854771712\n');
    expect(readCgroupUsage({ version: 1, cpuDir: join(r1, 'c'), memoryDir: join(r1, 'm') })).toMatchObject({
      swapBytes: 8192,
      swapLimitBytes: undefined,
    });
    writeFileSync(join(r2, 'memory.max'), 'max\n');
    expect(readCgroupUsage({ version: 2, dir: r2 })?.limitBytes).toBeUndefined();
    rmSync(join(r2, 'memory.max'));
    expect(readCgroupUsage({ version: 2, dir: r2 })?.limitBytes).toBeUndefined();
    expect(readCgroupUsage({ version: 2, dir: join(dir, 'missing') })).toBeUndefined();
    // Without the bounds (a pod's): the same usage, no limit or swap files read.
    writeFileSync(join(r2, 'memory.max'), '80000000\n');
    expect(readCgroupUsage({ version: 2, dir: r2 }, { bounds: false })).toEqual(v2Usage);
  });

  it('looks up a flat-keyed file’s value by its whole key, first line and last line included', () => {
    const text = 'rss 1\ntotal_rss 2\nrss_huge 3\ntotal_pgfault 4';
    expect(flatKeyedValue(text, 'rss')).toBe(1);
    expect(flatKeyedValue(text, 'total_rss')).toBe(2);
    expect(flatKeyedValue(text, 'rss_huge')).toBe(3);
    expect(flatKeyedValue(text, 'total_pgfault')).toBe(4);
    expect(flatKeyedValue(text, 'pgfault')).toBeUndefined();
    expect(flatKeyedValue(text, 'huge')).toBeUndefined();
    expect(flatKeyedValue('', 'rss')).toBeUndefined();
  });

  it('reads the details cAdvisor exports: cache, mapped files, swap, the CPU split and CFS throttling, limits, OOM kills, processes (v1 and v2)', () => {
    const v2 = tree({
      'memory.stat': 'anon 100\nfile 4096\nfile_mapped 512\n',
      'memory.current': '8192\n',
      'memory.swap.current': '0\n',
      'memory.max': '83886080\n',
      'memory.swap.max': 'max\n',
      'memory.events': 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n',
      'cpu.stat':
        'usage_usec 300\nuser_usec 200\nsystem_usec 100\nnr_periods 50\nnr_throttled 7\nthrottled_usec 2500\n',
      'cpu.max': '50000 100000\n',
      'cpu.weight': '20\n',
      'cgroup.procs': '10\n11\n',
      'memory.pressure':
        'some avg10=1.00 avg60=0.50 avg300=0.25 total=2000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n',
    });
    expect(readCgroupDetail({ version: 2, dir: v2 })).toEqual({
      cacheBytes: 4096,
      mappedFileBytes: 512,
      swapBytes: 0,
      maxUsageBytes: undefined,
      limitBytes: 83886080,
      swapLimitBytes: undefined,
      userNs: 200_000,
      systemNs: 100_000,
      cfsPeriods: 50,
      cfsThrottledPeriods: 7,
      cfsThrottledNs: 2_500_000,
      cpuShares: 2 + Math.floor((19 * 262142) / 9999),
      cpuQuotaUs: 50000,
      cpuPeriodUs: 100000,
      oomKills: 1,
      processes: 2,
      firstPid: 10,
      // Pressure stall information (cgroup v2 with PSI): the files there are.
      pressure: {
        memory: {
          some: { avg10: 1, avg60: 0.5, avg300: 0.25, total: 2_000_000 },
          full: { avg10: 0, avg60: 0, avg300: 0, total: 0 },
        },
      },
    });
    const v1 = tree({
      'm/memory.stat': 'total_cache 8192\ntotal_mapped_file 1024\n',
      'm/memory.usage_in_bytes': '20000\n',
      'm/memory.memsw.usage_in_bytes': '20000\n',
      'm/memory.limit_in_bytes': '9223372036854771712\n',
      'm/memory.max_usage_in_bytes': '30000\n',
      'm/memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n',
      'm/cgroup.procs': '5\n',
      'a/cpuacct.stat': 'user 150\nsystem 50\n',
      'c/cpu.stat': 'nr_periods 9\nnr_throttled 3\nthrottled_time 1500000000\n',
      'c/cpu.shares': '512\n',
      'c/cpu.cfs_quota_us': '-1\n',
      'c/cpu.cfs_period_us': '100000\n',
    });
    expect(
      readCgroupDetail({ version: 1, cpuDir: join(v1, 'a'), memoryDir: join(v1, 'm'), cfsDir: join(v1, 'c') }),
    ).toEqual({
      cacheBytes: 8192,
      mappedFileBytes: 1024,
      swapBytes: 0,
      maxUsageBytes: 30000,
      limitBytes: undefined,
      swapLimitBytes: undefined,
      userNs: 1.5e9,
      systemNs: 0.5e9,
      cfsPeriods: 9,
      cfsThrottledPeriods: 3,
      cfsThrottledNs: 1.5e9,
      cpuShares: 512,
      cpuQuotaUs: undefined,
      cpuPeriodUs: 100000,
      oomKills: 2,
      processes: 1,
      firstPid: 5,
    });
    expect(readCgroupDetail({ version: 2, dir: join(dir, 'gone') })).toBeUndefined();
  });
});
