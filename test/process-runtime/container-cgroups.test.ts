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
import {
  cgroupPids,
  cgroupUsage,
  createContainerCgroup,
  detectContainerCgroups,
  joinCgroupArgv,
  killCgroup,
  removeContainerCgroup,
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
