/**
 * The containerd test fixture cleans up after test processes that died without stopping theirs:
 * a fixture directory whose owner is gone loses its mounts and is removed; one whose owner runs,
 * or that has no owner file yet, is left alone.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanStaleFixtures } from '../fixtures/containerd.js';

const mounted = (p: string) =>
  readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[1] === p);

describe('containerd fixture clean-up', () => {
  it.runIf(process.getuid?.() === 0)("removes a dead owner's fixture with its mounts, and nothing else", () => {
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
    try {
      expect(mounted(join(stale, 'rootfs'))).toBe(true);
      expect(cleanStaleFixtures(prefix)).toEqual([stale]);
      expect(mounted(join(stale, 'rootfs'))).toBe(false);
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(live)).toBe(true);
      expect(existsSync(fresh)).toBe(true);
    } finally {
      if (mounted(join(stale, 'rootfs'))) execFileSync('umount', ['-l', join(stale, 'rootfs')]);
      for (const d of [stale, live, fresh]) rmSync(d, { recursive: true, force: true });
    }
  });
});
