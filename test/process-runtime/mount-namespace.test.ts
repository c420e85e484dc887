/**
 * The pure parts of the process runtime's mount namespaces: which host directories are shadowed, and how commands
 * enter.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  enterMountNamespace,
  planMountNamespace,
  shadowsFor,
  wrapInMountNamespace,
} from '../../src/process-runtime/mount-namespace.js';
import { mayStopAnswering } from '../../src/process-runtime/mount-sources.js';

describe('mayStopAnswering', () => {
  it("takes what the kubelet makes under its pod directories as its own, a CSI volume's mount there and all else not", () => {
    const root = '/var/lib/kubelet';
    expect(mayStopAnswering('/var/lib/kubelet/pods/u1/etc-hosts', root)).toBe(false);
    expect(mayStopAnswering('/var/lib/kubelet/pods/u1/volumes/kubernetes.io~configmap/cm', `${root}/`)).toBe(false);
    expect(mayStopAnswering('/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv/mount', root)).toBe(true);
    expect(mayStopAnswering('/mnt/nfs/data', root)).toBe(true);
    expect(mayStopAnswering('/var/lib/kubeletx/pods/u1/etc-hosts', root)).toBe(true);
  });
});

describe('shadowsFor', () => {
  const mounts = [
    '/',
    '/proc',
    '/sys',
    '/sys/fs/cgroup',
    '/dev',
    '/dev/pts',
    '/dev/shm',
    '/var/lib/kubelet/pods/a/volumes/x',
    '/work',
  ];
  it('restores the direct submounts of each shadowed directory, relative to it', () => {
    expect(shadowsFor(['/dev'], mounts)).toEqual([{ dir: '/dev', submounts: ['pts', 'shm'] }]);
    expect(shadowsFor(['/'], mounts)).toEqual([
      { dir: '/', submounts: ['dev', 'proc', 'sys', 'var/lib/kubelet/pods/a/volumes/x', 'work'] },
    ]);
    expect(shadowsFor(['/var/lib'], mounts)).toEqual([{ dir: '/var/lib', submounts: ['kubelet/pods/a/volumes/x'] }]);
  });
  it('shadows once per directory, not inside another shadow unless a mount point lies between', () => {
    expect(shadowsFor(['/dev', '/dev'], mounts).map((s) => s.dir)).toEqual(['/dev']);
    expect(shadowsFor(['/var/lib', '/'], mounts).map((s) => s.dir)).toEqual(['/']);
    // /dev/pts is a mount of its own under /: the overlay of / does not reach into it.
    expect(shadowsFor(['/dev/pts', '/'], mounts).map((s) => s.dir)).toEqual(['/', '/dev/pts']);
    expect(shadowsFor(['/dev', '/'], mounts).map((s) => s.dir)).toEqual(['/', '/dev']);
  });
});

describe('enterMountNamespace', () => {
  it("enters the container's namespace and root, its working dir opened through that root", () => {
    expect(enterMountNamespace(42, ['ls'], { cwd: '/data', uid: 1000 })).toEqual([
      'nsenter',
      '--mount=/proc/42/ns/mnt',
      '--root=/proc/42/root',
      '--wd=/proc/42/root/data',
      '--',
      'setpriv',
      '--reuid=1000',
      '--clear-groups',
      '--',
      'ls',
    ]);
  });
});

describe.runIf(process.getuid?.() === 0)('a shadowed directory set up while the host changes', () => {
  /**
   * Runs a container whose volume's mount point is missing under a fresh directory with two
   * tmpfs submounts, one of which goes away between the plan and the start; `scratchInside` puts
   * the container's scratch dir in that directory too (a runtime state dir under a shadowed one).
   */
  async function runShadowed(scratchInside: boolean) {
    const base = mkdtempSync(join(tmpdir(), 'tsk-shadow-'));
    const [kept, gone, volume] = ['kept', 'gone', 'volume'].map((d) => join(base, d));
    for (const d of [kept, gone, volume]) mkdirSync(d);
    execFileSync('mount', ['-t', 'tmpfs', 'tsk-kept', kept]);
    execFileSync('mount', ['-t', 'tmpfs', 'tsk-gone', gone]);
    writeFileSync(join(kept, 'marker'), 'kept');
    writeFileSync(join(volume, 'data'), 'volume');
    const scratch = scratchInside ? join(base, 'state', 'scratch') : mkdtempSync(join(tmpdir(), 'tsk-scratch-'));
    mkdirSync(scratch, { recursive: true });
    try {
      const mounts = [{ host_path: volume, container_path: join(base, 'missing', 'mnt') }];
      const plan = await planMountNamespace(mounts, new Map([[volume, 'dir']]), scratch);
      expect(plan.shadows).toEqual([{ dir: base, submounts: ['gone', 'kept'] }]);
      execFileSync('umount', [gone]);
      rmdirSync(gone);
      const command = ['/bin/sh', '-c', `cat ${kept}/marker ${base}/missing/mnt/data`];
      const argv = wrapInMountNamespace(command, mounts, {}, plan, '/');
      const run = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
      return { status: run.status, stdout: run.stdout, stderr: run.stderr };
    } finally {
      spawnSync('umount', [kept]);
      spawnSync('umount', [gone]);
      rmSync(base, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  // Regression: another pod's volume unmounted or a network namespace of containerd's removed
  // under /run between the plan and the set-up made the set-up exit 127: the container never ran.
  it('starts the container when a submount has gone since the plan', async () => {
    expect(await runShadowed(false)).toEqual({ status: 0, stdout: 'keptvolume', stderr: '' });
  });

  // Regression: the scratch dir's tmpfs was reached through the overlay that hides it.
  it('starts the container when its scratch dir is under the shadowed directory', async () => {
    expect(await runShadowed(true)).toEqual({ status: 0, stdout: 'keptvolume', stderr: '' });
  });
});
