/**
 * The mount table of this process's mount namespace (/proc/self/mountinfo): where each filesystem is mounted, its
 * type, and whether its mount is shared.
 */
import { readFile } from 'node:fs/promises';

export interface MountEntry {
  /** The mount point, octal escapes decoded. */
  path: string;
  fstype: string;
  /** The mount is in a shared peer group (mounts under it propagate). */
  shared: boolean;
}

/** Decodes mountinfo's octal escapes (\040 for a space). */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The entries of a mountinfo table, in its order (a mount over another comes after it). Pure. */
export function parseMountTable(mountinfo: string): MountEntry[] {
  return mountinfo
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(' ');
      const separator = fields.indexOf('-');
      return {
        path: unescape(fields[4] ?? ''),
        fstype: fields[separator + 1] ?? '',
        shared: fields.slice(6, separator).some((o) => o.startsWith('shared:')),
      };
    })
    .filter((m) => m.path);
}

/** This process's mount table; empty when it cannot be read. */
export async function readMountTable(file = '/proc/self/mountinfo'): Promise<MountEntry[]> {
  return parseMountTable(await readFile(file, 'utf8').catch(() => ''));
}

let recent: { table: Promise<MountEntry[]>; readAt: number } | undefined;

/**
 * This process's mount table as read at most `maxAgeMs` ago: for questions asked on every container start and exec,
 * which a mount made or removed a moment before does not change.
 */
export function recentMountTable(maxAgeMs = 2000): Promise<MountEntry[]> {
  const now = performance.now();
  if (!recent || now - recent.readAt > maxAgeMs) recent = { table: readMountTable(), readAt: now };
  return recent.table;
}

/** The mount `path` lies in (the deepest mount point holding it; the last mounted of equal ones). Pure. */
export function mountHolding(mounts: readonly MountEntry[], path: string): MountEntry | undefined {
  let holder: MountEntry | undefined;
  for (const m of mounts) {
    const holds = path === m.path || path.startsWith(m.path.endsWith('/') ? m.path : `${m.path}/`);
    if (holds && (!holder || m.path.length >= holder.path.length)) holder = m;
  }
  return holder;
}

/**
 * Filesystem types whose calls wait on something outside the kernel — a server (NFS, SMB, Ceph, …), a FUSE daemon, an
 * automounter — and block for as long as it does not answer.
 */
const WAITS_ON_OTHERS =
  /^(nfs4?|cifs|smb3|smbfs|ceph|9p|afs|lustre|gpfs|glusterfs|beegfs|fuse|fuseblk|fuse\..+|autofs)$/;

/** Whether a filesystem of type `fstype` may stop answering. Pure. */
export function mayStopAnsweringFilesystem(fstype: string): boolean {
  return WAITS_ON_OTHERS.test(fstype);
}

/**
 * Whether `path` lies on a filesystem that may stop answering, by its type in `table` (this process's recent mount
 * table; the current one for a path mounted a moment ago).
 */
export async function onFilesystemThatMayStopAnswering(
  path: string,
  table: Promise<MountEntry[]> = recentMountTable(),
): Promise<boolean> {
  const holder = mountHolding(await table, path);
  return holder !== undefined && mayStopAnsweringFilesystem(holder.fstype);
}
