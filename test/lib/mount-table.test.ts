import { describe, expect, it } from 'vitest';
import { mayStopAnsweringFilesystem, mountHolding, parseMountTable } from '../../src/lib/mount-table.js';

const MOUNTINFO = [
  '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw',
  '30 22 0:5 / /mnt/with\\040space rw - tmpfs tmpfs rw',
  '31 22 0:50 / /mnt/nfs rw,relatime shared:40 - nfs4 server:/export rw,vers=4.2',
  '32 31 0:51 / /mnt/nfs/local rw - ext4 /dev/vdb rw',
  '33 22 0:52 / /srv rw - fuse.sshfs host:/srv rw',
  '34 22 0:53 / /srv rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('the mount table', () => {
  it("reads each line's mount point (octal escapes decoded), type and propagation", () => {
    const table = parseMountTable(MOUNTINFO);
    expect(table.map((m) => m.path)).toEqual(['/', '/mnt/with space', '/mnt/nfs', '/mnt/nfs/local', '/srv', '/srv']);
    expect(table.map((m) => m.fstype)).toEqual(['ext4', 'tmpfs', 'nfs4', 'ext4', 'fuse.sshfs', 'tmpfs']);
    expect(table.map((m) => m.shared)).toEqual([true, false, true, false, false, false]);
  });

  it('finds the mount a path lies in: the deepest mount point holding it, the last of a stack', () => {
    const table = parseMountTable(MOUNTINFO);
    const typeAt = (path: string) => mountHolding(table, path)?.fstype;
    expect(typeAt('/usr/bin/sh')).toBe('ext4');
    expect(typeAt('/mnt/nfs')).toBe('nfs4');
    expect(typeAt('/mnt/nfs/bin/tool')).toBe('nfs4');
    expect(typeAt('/mnt/nfs/local/tool')).toBe('ext4');
    expect(typeAt('/mnt/nfsx/tool')).toBe('ext4');
    expect(typeAt('/mnt/with space/x')).toBe('tmpfs');
    expect(typeAt('/srv/x')).toBe('tmpfs');
    expect(mountHolding([], '/x')).toBeUndefined();
  });

  it('tells the filesystems that wait on a server or a daemon', () => {
    for (const type of ['nfs', 'nfs4', 'cifs', 'smb3', 'ceph', '9p', 'fuse', 'fuseblk', 'fuse.sshfs', 'autofs'])
      expect(mayStopAnsweringFilesystem(type), type).toBe(true);
    for (const type of ['ext4', 'xfs', 'btrfs', 'tmpfs', 'overlay', 'proc', 'sysfs', 'cgroup', 'fusectl'])
      expect(mayStopAnsweringFilesystem(type), type).toBe(false);
  });
});
