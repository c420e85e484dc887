/** The pure parts of the process runtime's mount namespaces: which host directories are shadowed, and how commands enter. */
import { describe, expect, it } from 'vitest';
import { enterMountNamespace, mountPointsOf, shadowsFor } from '../../src/process-runtime/mount-namespace.js';

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

describe('mountPointsOf', () => {
  it("reads mountinfo's mount point field with its octal escapes", () => {
    const info = ['22 1 8:1 / / rw - ext4 /dev/vda rw', '30 22 0:5 / /mnt/with\\040space rw - tmpfs tmpfs rw', ''].join(
      '\n',
    );
    expect(mountPointsOf(info)).toEqual(['/', '/mnt/with space']);
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
