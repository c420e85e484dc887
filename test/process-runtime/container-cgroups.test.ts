/**
 * Container cgroups of the process runtime: usage read as cAdvisor does from v1 and v2 files
 * (on fixture trees), the join chain keeps one PID, and (as root, on this machine's cgroupfs) a
 * process that joined is found and killed with everything it forked.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cgroupPids,
  cgroupUsage,
  createContainerCgroup,
  detectContainerCgroups,
  joinCgroupArgv,
  killCgroup,
  removeContainerCgroup,
  removeRuntimeCgroups,
  type ContainerCgroups,
} from '../../src/process-runtime/container-cgroups.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cgr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(dir, 'tree-'));
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(root, p, '..'), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

describe('container cgroups', () => {
  it('reads v1 usage: cpuacct.usage, usage_in_bytes, working set without inactive file, total_rss', async () => {
    const root = tree({
      'mem/c1/memory.usage_in_bytes': '10000000\n',
      'mem/c1/memory.stat': 'cache 5\nrss 7\ntotal_rss 3000000\ntotal_inactive_file 4000000\n',
      'cpu/c1/cpuacct.usage': '123456789\n',
    });
    const cg: ContainerCgroups = { version: 1, roots: [join(root, 'mem'), join(root, 'cpu')], memoryRoot: join(root, 'mem'), cpuRoot: join(root, 'cpu') };
    expect(cgroupUsage(cg, 'c1')).toEqual({ cpuNs: 123456789, memoryUsageBytes: 10000000, workingSetBytes: 6000000, rssBytes: 3000000 });
    expect(cgroupUsage(cg, 'missing')).toBeUndefined();
  });

  it('reads v2 usage: cpu.stat usage_usec, memory.current, inactive_file, anon', async () => {
    const root = tree({
      'c2/cpu.stat': 'usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n',
      'c2/memory.current': '8192000\n',
      'c2/memory.stat': 'anon 4096000\nfile 4096000\ninactive_file 1024000\n',
    });
    const cg: ContainerCgroups = { version: 2, roots: [root], memoryRoot: root, cpuRoot: root };
    expect(cgroupUsage(cg, 'c2')).toEqual({ cpuNs: 2_500_000, memoryUsageBytes: 8192000, workingSetBytes: 7168000, rssBytes: 4096000 });
  });

  it('joins the cgroup in the same PID as the command it then runs', () => {
    const procs = join(dir, 'procs');
    writeFileSync(procs, '');
    const argv = joinCgroupArgv([procs], ['sh', '-c', 'echo $$']);
    const out = execFileSync(argv[0], argv.slice(1)).toString().trim();
    expect(execFileSync('cat', [procs]).toString().trim()).toBe(out);
    expect(joinCgroupArgv([], ['a'])).toEqual(['a']);
  });

  it.runIf(process.getuid?.() === 0)('as root: finds and kills every process that joined, forked and daemonized ones too', async () => {
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
    await removeContainerCgroup(cg, 'k1');
    await removeRuntimeCgroups(cg);
    for (const r of cg.roots) expect(() => execFileSync('test', ['-d', r])).toThrow();
  });
});
