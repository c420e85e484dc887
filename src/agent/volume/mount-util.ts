/**
 * Host mounts the volume plugins make (tmpfs for emptyDir medium Memory, secret and projected
 * volumes; a raw block volume's device file bound into the pod) and their removal. Mount points are read from
 * /proc/self/mountinfo (lib/mount-table.ts); mounting uses the util-linux `mount` / `umount` commands (root only).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { mountHolding, readMountTable } from '../../lib/mount-table.js';
import { TMPFS_NOSWAP_OPTION } from './tmpfs-noswap.js';

const run = promisify(execFile);

/**
 * Upstream MakeRShared(rootDir) at kubelet start: the mount holding `dir` must be shared so that
 * containers can receive volume mounts with HostToContainer / Bidirectional propagation (runc
 * refuses them otherwise). When it is not, `dir` is bind-mounted onto itself and made rshared.
 */
export async function makeRShared(dir: string): Promise<void> {
  const holder = mountHolding(await readMountTable(), dir);
  if (holder?.shared) return;
  if (holder?.path !== dir) await run('mount', ['--bind', dir, dir]);
  await run('mount', ['--make-rshared', dir]);
}

/** True when `path` is a mount point. */
export async function isMountPoint(path: string): Promise<boolean> {
  return (await readMountTable()).some((m) => m.path === path);
}

/**
 * Mounts a tmpfs at `path` (an existing directory) unless one is there, with upstream's options only: its size
 * (`sizeBytes` 0: tmpfs's default) and `noswap` where the kernel has it. Its root is then tmpfs's own mode, 1777, as on
 * a Go kubelet's node.
 */
export async function mountTmpfs(path: string, o: { sizeBytes?: number; noswap: boolean }): Promise<void> {
  if (await isMountPoint(path)) return;
  const options = [...(o.sizeBytes ? [`size=${o.sizeBytes}`] : []), ...(o.noswap ? [TMPFS_NOSWAP_OPTION] : [])];
  await run('mount', ['-t', 'tmpfs', ...(options.length ? ['-o', options.join(',')] : []), 'tmpfs', path]);
}

/**
 * Mounts a hugetlbfs with `pageSizeOption` (`pagesize=2Mi`) at `path` unless something is mounted there (upstream
 * setupHugepages).
 */
export async function mountHugetlbfs(path: string, pageSizeOption: string): Promise<void> {
  if (await isMountPoint(path)) return;
  await run('mount', ['-t', 'hugetlbfs', '-o', pageSizeOption, 'nodev', path]);
}

/**
 * Bind-mounts the file (a device node) `src` on `dst`, made an empty file when missing; nothing when `dst` is already a
 * mount point.
 */
export async function bindMountFile(src: string, dst: string): Promise<void> {
  await mkdir(dirname(dst), { recursive: true, mode: 0o750 });
  await writeFile(dst, '', { flag: 'a' });
  if (await isMountPoint(dst)) return;
  await run('mount', ['--bind', src, dst]);
}

/** Unmounts every mount at or under `dir` (deepest first). Rejects when one cannot be unmounted. */
export async function unmountUnder(dir: string): Promise<void> {
  const under = (await readMountTable()).map((m) => m.path).filter((p) => p === dir || p.startsWith(`${dir}/`));
  for (const p of [...new Set(under)].sort((a, b) => b.length - a.length)) {
    try {
      await run('umount', [p]);
    } catch (err) {
      try {
        await run('umount', ['-l', p]);
      } catch {
        throw new Error(`unmount ${p}: ${(err as Error).message}`);
      }
    }
  }
}
