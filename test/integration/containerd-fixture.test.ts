/**
 * The containerd test fixture cleans up after test processes that died without stopping theirs:
 * a fixture directory whose owner is gone loses its mounts, its pods' processes and cgroups, and is removed; one whose
 * owner runs, or that has no owner file yet, is left alone.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanStaleFixtures } from '../fixtures/containerd.js';

const mounted = (p: string) =>
  readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[1] === p);

describe('containerd fixture clean-up', () => {
  it.runIf(process.getuid?.() === 0)(
    "removes a dead owner's fixture with its mounts, pods and cgroups, and nothing else",
    async () => {
      const prefix = `/tmp/tsk-fixture-test-${process.pid}-`;
      // A pid that is certainly gone: a child that has exited.
      const dead = spawnSync('true').pid!;
      const stale = mkdtempSync(prefix);
      writeFileSync(join(stale, 'owner.pid'), String(dead));
      mkdirSync(join(stale, 'rootfs'));
      execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', join(stale, 'rootfs')]);
      const live = mkdtempSync(prefix);
      writeFileSync(join(live, 'owner.pid'), String(process.pid));
      const fresh = mkdtempSync(prefix);
      // A pod process of the dead fixture, in a cgroup under the fixture's cgroup root, as its pause process stays
      // after its shim is gone.
      const cgroupFs = existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/pids';
      const podCgroup = join(cgroupFs, basename(stale), 'kubepods', 'podstale');
      mkdirSync(podCgroup, { recursive: true });
      const pause = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
      pause.unref();
      writeFileSync(join(podCgroup, 'cgroup.procs'), String(pause.pid));
      try {
        expect(mounted(join(stale, 'rootfs'))).toBe(true);
        expect(cleanStaleFixtures(prefix)).toEqual([stale]);
        expect(mounted(join(stale, 'rootfs'))).toBe(false);
        // Its cgroups removed, which needed its process killed.
        expect(existsSync(join(cgroupFs, basename(stale)))).toBe(false);
        const exited = new Promise((r) => pause.once('exit', (_code, signal) => r(signal)));
        expect(pause.signalCode ?? (await Promise.race([exited, sleep(5000)]))).toBe('SIGKILL');
        expect(existsSync(stale)).toBe(false);
        expect(existsSync(live)).toBe(true);
        expect(existsSync(fresh)).toBe(true);
      } finally {
        pause.kill('SIGKILL');
        if (mounted(join(stale, 'rootfs'))) execFileSync('umount', ['-l', join(stale, 'rootfs')]);
        for (const d of [stale, live, fresh]) rmSync(d, { recursive: true, force: true });
      }
    },
  );
});
