/**
 * Host mounts the volume plugins make (tmpfs for emptyDir medium Memory, secret and projected
 * volumes; a raw block volume's device file bound into the pod) and their removal. Mount points are read from
 * /proc/self/mountinfo; mounting uses the
 * util-linux `mount` / `umount` commands (root only).
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { TMPFS_NOSWAP_OPTION } from './tmpfs-noswap.js';

const run = promisify(execFile);

/** Decodes mountinfo's octal escapes (\040 for a space). */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Every mount point of this process's mount namespace, with its filesystem type and whether it is shared. */
export async function listMounts(): Promise<{ path: string; fstype: string; shared: boolean }[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const f = l.split(' ');
      const sep = f.indexOf('-');
      return {
        path: unescape(f[4]),
        fstype: f[sep + 1] ?? '',
        shared: f.slice(6, sep).some((o) => o.startsWith('shared:')),
      };
    });
}

/**
 * Upstream MakeRShared(rootDir) at kubelet start: the mount holding `dir` must be shared so that
 * containers can receive volume mounts with HostToContainer / Bidirectional propagation (runc
 * refuses them otherwise). When it is not, `dir` is bind-mounted onto itself and made rshared.
 */
export async function makeRShared(dir: string): Promise<void> {
  const mounts = await listMounts();
  const holder = mounts
    .filter((m) => dir === m.path || dir.startsWith(m.path.endsWith('/') ? m.path : `${m.path}/`))
    .sort((a, b) => b.path.length - a.path.length)[0];
  if (holder?.shared) return;
  if (holder?.path !== dir) await run('mount', ['--bind', dir, dir]);
  await run('mount', ['--make-rshared', dir]);
}

/** True when `path` is a mount point. */
export async function isMountPoint(path: string): Promise<boolean> {
  return (await listMounts()).some((m) => m.path === path);
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
  const under = (await listMounts()).map((m) => m.path).filter((p) => p === dir || p.startsWith(`${dir}/`));
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
