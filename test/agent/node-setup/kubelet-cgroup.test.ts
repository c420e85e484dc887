/**
 * kubeletCgroups: the kubelet makes the named cgroup and moves itself into it. On laid-out
 * cgroup trees (v1 and v2), on the host's real cgroupfs with a child process, and the real CLI
 * with --kubelet-cgroups (as root, which CI is).
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { moveIntoCgroup } from '../../../src/agent/node-setup/kubelet-cgroup.js';
import { detectHierarchies, hierarchyDirs } from '../../../src/lib/cgroup-hierarchies.js';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, untilServing } from '../../e2e/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-kubelet-cgroup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = process.getuid?.() === 0;

/**
 * A cgroup tree laid out in files: v2 (cgroup.controllers at the top) or v1 (cpu and cpuacct mounted together, memory,
 * pids).
 */
function tree(version: 1 | 2): string {
  const r = mkdtempSync(join(dir, `v${version}-`));
  if (version === 2) writeFileSync(join(r, 'cgroup.controllers'), 'cpu memory pids');
  else {
    for (const c of ['cpu,cpuacct', 'memory', 'pids']) {
      mkdirSync(join(r, c));
      writeFileSync(join(r, c, 'cgroup.procs'), '');
    }
    symlinkSync('cpu,cpuacct', join(r, 'cpu'));
    symlinkSync('cpu,cpuacct', join(r, 'cpuacct'));
  }
  return r;
}

/** Removes a cgroup made for a test in every hierarchy. */
async function removeCgroup(name: string): Promise<void> {
  const h = await detectHierarchies();
  for (const d of h ? hierarchyDirs(h, name) : []) if (existsSync(d)) rmdirSync(d);
}

describe('kubeletCgroups', () => {
  it('v2: makes the cgroup, enables the controllers on the way down, writes the pid once', async () => {
    const r = tree(2);
    expect(await moveIntoCgroup(4242, '/system.slice/kubelet.service', r)).toBe(true);
    expect(readFileSync(join(r, 'system.slice/kubelet.service/cgroup.procs'), 'utf8')).toBe('4242');
    expect(readFileSync(join(r, 'system.slice/cgroup.subtree_control'), 'utf8')).toBe('+cpu +memory +pids');
    // Already there: nothing to move.
    expect(await moveIntoCgroup(4242, '/system.slice/kubelet.service', r)).toBe(false);
  });

  it('v1: one write per hierarchy, controllers mounted together counted once', async () => {
    const r = tree(1);
    expect(await moveIntoCgroup(7, '/kubelet', r)).toBe(true);
    for (const c of ['cpu,cpuacct', 'memory', 'pids'])
      expect(readFileSync(join(r, c, 'kubelet/cgroup.procs'), 'utf8')).toBe('7');
  });

  it('fails with the reason when there is no hierarchy to write to', async () => {
    await expect(moveIntoCgroup(7, '/kubelet', join(dir, 'nothing'))).rejects.toThrow(/no writable cgroup hierarchy/);
  });

  it.skipIf(!root)(
    "on the host's cgroupfs: a process ends up in the named cgroup of the memory hierarchy",
    async () => {
      const name = `/tsk-test-kubelet-cgroup-${process.pid}`;
      const child = spawn('sleep', ['30'], { stdio: 'ignore' });
      try {
        expect(await moveIntoCgroup(child.pid!, name)).toBe(true);
        const lines = readFileSync(`/proc/${child.pid}/cgroup`, 'utf8').split('\n');
        expect(lines.some((l) => /^\d+:(memory|):/.test(l) && l.endsWith(`:${name}`))).toBe(true);
      } finally {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
        await removeCgroup(name);
      }
    },
  );

  it.skipIf(!root)(
    'the CLI with --kubelet-cgroups runs in that cgroup and reports it as its system container',
    async () => {
      const name = `/tsk-test-kubelet-cli-${process.pid}`;
      const ports = await freeKubeletPorts();
      const k = startKubelet(
        kubeletArgs({ dir: join(dir, 'cli'), ports, node: 'cg', extra: ['--kubelet-cgroups', name] }),
      );
      try {
        await untilServing(ports, k);
        const lines = readFileSync(`/proc/${k.proc.pid}/cgroup`, 'utf8').split('\n');
        expect(lines.some((l) => /^\d+:(memory|):/.test(l) && l.endsWith(`:${name}`))).toBe(true);
        let kubelet: { memory?: { workingSetBytes?: number } } | undefined;
        for (let i = 0; i < 50 && !kubelet?.memory?.workingSetBytes; i++) {
          const s = JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/stats/summary`)).body) as {
            node: { systemContainers: { name: string; memory?: { workingSetBytes?: number } }[] };
          };
          kubelet = s.node.systemContainers.find((c) => c.name === 'kubelet');
          await new Promise((r) => setTimeout(r, 100));
        }
        // The cgroup's own figures: what the kubelet allocated after moving in (it moves before the
        // agent is built), not the process's resident size (what is reported without a cgroup of its
        // own), which also holds what Node allocated before the move, still charged where it was.
        const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${k.proc.pid}/status`, 'utf8'))?.[1]) * 1024;
        expect(kubelet?.memory?.workingSetBytes).toBeGreaterThan(2 ** 20);
        expect(kubelet?.memory?.workingSetBytes).toBeLessThan(rss);
      } finally {
        await k.stop();
        await removeCgroup(name);
      }
    },
    60_000,
  );
});
