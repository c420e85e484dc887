/**
 * Container cgroups of the process runtime: the join chain keeps one PID, and (as root, on this
 * machine's cgroupfs) a process that joined is found, measured and killed with everything it
 * forked. Reading v1 / v2 usage files is tested with lib/cgroup-usage.ts
 * (test/agent/stats/system-containers.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSharesToWeight } from '../../src/lib/cgroup-limits.js';
import {
  applyCgroupLimits,
  cgroupPids,
  limitWrites,
  oomKills,
  cgroupUsage,
  createContainerCgroup,
  detectContainerCgroups,
  joinCgroupArgv,
  killCgroup,
  removeCgroup,
  removeRuntimeCgroups,
} from '../../src/process-runtime/container-cgroups.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cgr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('container cgroups', () => {
  it('joins the cgroup in the same PID as the command it then runs', () => {
    const procs = join(dir, 'procs');
    writeFileSync(procs, '');
    const argv = joinCgroupArgv([procs], ['sh', '-c', 'echo $$']);
    const out = execFileSync(argv[0], argv.slice(1)).toString().trim();
    expect(execFileSync('cat', [procs]).toString().trim()).toBe(out);
    expect(joinCgroupArgv([], ['a'])).toEqual(['a']);
  });

  it('writes the limits as the kubelet writes its pod cgroups (lib/cgroup-limits.ts): CPU shares (weight on v2), the CFS quota after its period, memory; nothing unset', () => {
    const v1 = {
      version: 1 as const,
      roots: ['/m/rt', '/c/rt'],
      memoryRoot: '/m/rt',
      cpuRoot: '/ca/rt',
      cpuLimitRoot: '/c/rt',
    };
    const limits = { memory_limit_in_bytes: 64 << 20, cpu_shares: 512, cpu_quota: 50_000, cpu_period: 100_000 };
    expect(limitWrites(v1, 'k', limits)).toEqual([
      ['/c/rt/k/cpu.shares', '512'],
      ['/c/rt/k/cpu.cfs_period_us', '100000'],
      ['/c/rt/k/cpu.cfs_quota_us', '50000'],
      ['/m/rt/k/memory.limit_in_bytes', String(64 << 20)],
    ]);
    const v2 = { version: 2 as const, roots: ['/u/rt'], memoryRoot: '/u/rt', cpuRoot: '/u/rt', cpuLimitRoot: '/u/rt' };
    expect(limitWrites(v2, 'k', limits)).toEqual([
      ['/u/rt/k/cpu.weight', String(cpuSharesToWeight(512))],
      ['/u/rt/k/cpu.max', '50000 100000'],
      ['/u/rt/k/memory.max', String(64 << 20)],
    ]);
    // BestEffort: shares 2 and nothing else; no limits at all for a config without resources.
    expect(limitWrites(v1, 'k', { cpu_shares: 2, memory_limit_in_bytes: 0, cpu_quota: 0 })).toEqual([
      ['/c/rt/k/cpu.shares', '2'],
    ]);
    expect(limitWrites(v1, 'k', undefined)).toEqual([]);
    // Huge page limits where the kernel has hugetlb (CRI gives every size the machine has), none elsewhere.
    const huge = {
      hugepage_limits: [
        { page_size: '2MB', limit: 4 << 20 },
        { page_size: '1GB', limit: 0 },
      ],
    };
    expect(limitWrites({ ...v1, hugetlbRoot: '/h/rt' }, 'k', huge)).toEqual([
      ['/h/rt/k/hugetlb.2MB.limit_in_bytes', String(4 << 20)],
      ['/h/rt/k/hugetlb.1GB.limit_in_bytes', '0'],
    ]);
    expect(limitWrites({ ...v2, hugetlbRoot: '/u/rt' }, 'k', huge)).toEqual([
      ['/u/rt/k/hugetlb.2MB.max', String(4 << 20)],
      ['/u/rt/k/hugetlb.1GB.max', '0'],
    ]);
    expect(limitWrites(v1, 'k', huge)).toEqual([]);
    expect(limitWrites({ ...v1, cpuLimitRoot: undefined }, 'k', limits)).toEqual([
      ['/m/rt/k/memory.limit_in_bytes', String(64 << 20)],
    ]);
    // CRI's unified files are cgroup v2's, written as named there; a name that is a path is refused.
    const unified = { unified: { 'memory.oom.group': '1' } };
    expect(limitWrites(v2, 'k', unified)).toEqual([['/u/rt/k/memory.oom.group', '1']]);
    expect(limitWrites(v1, 'k', unified)).toEqual([]);
    expect(() => limitWrites(v2, 'k', { unified: { '../../escape.max': '1' } })).toThrow(
      'invalid cgroup v2 file name "../../escape.max"',
    );
  });

  it.runIf(process.getuid?.() === 0)(
    'as root: the memory limit holds, and the OOM kill it causes is counted',
    async () => {
      const cg = (await detectContainerCgroups(`test-oom${process.pid}`))!;
      const procs = await createContainerCgroup(cg, 'oom');
      await applyCgroupLimits(cg, 'oom', {
        memory_limit_in_bytes: 16 << 20,
        cpu_quota: 20_000,
        cpu_period: 100_000,
      });
      expect(
        execFileSync('cat', [join(cg.memoryRoot, 'oom', cg.version === 2 ? 'memory.max' : 'memory.limit_in_bytes')])
          .toString()
          .trim(),
      ).toBe(String(16 << 20));
      expect(oomKills(cg, 'oom')).toBe(0);
      const argv = joinCgroupArgv(procs, ['sh', '-c', 'a=x; while true; do a="$a$a"; done']);
      const child = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
      const [code, signal] = await new Promise<[number | null, string | null]>((r) =>
        child.on('exit', (c, s) => r([c, s])),
      );
      expect([code, signal]).toEqual([null, 'SIGKILL']);
      expect(oomKills(cg, 'oom')).toBeGreaterThan(0);
      await removeCgroup(cg, 'oom');
      await removeRuntimeCgroups(cg);
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'as root: finds and kills every process that joined, forked and daemonized ones too',
    async () => {
      const cg = (await detectContainerCgroups(`test${process.pid}`))!;
      expect(cg).toBeDefined();
      const procs = await createContainerCgroup(cg, 'k1');
      const argv = joinCgroupArgv(procs, ['sh', '-c', '(env -i setsid sleep 300 &) ; sleep 300']);
      const child = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
      const pidsIn = async () => {
        for (let i = 0; i < 100 && cgroupPids(cg, 'k1').length < 3; i++) await new Promise((r) => setTimeout(r, 20));
        return cgroupPids(cg, 'k1');
      };
      const pids = await pidsIn();
      expect(pids).toContain(child.pid);
      expect(pids.length).toBeGreaterThanOrEqual(3);
      expect(cgroupUsage(cg, 'k1')?.memoryUsageBytes).toBeGreaterThan(0);
      expect(await killCgroup(cg, 'k1')).toBeGreaterThanOrEqual(3);
      expect(cgroupPids(cg, 'k1')).toEqual([]);
      await removeCgroup(cg, 'k1');
      await removeRuntimeCgroups(cg);
      for (const r of cg.roots) expect(() => execFileSync('test', ['-d', r])).toThrow();
    },
  );
});
