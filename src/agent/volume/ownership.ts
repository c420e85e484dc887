/**
 * Upstream SetVolumeOwnership (pkg/volume/volume_linux.go): every file of a volume gets group
 * `fsGroup` and the group bits of `rwMask` (0660) or, for read-only volumes, `roMask` (0440);
 * directories also get setgid and 0110 so new files inherit the group. Symlinks are chowned, not
 * chmodded. The walk visits a directory's contents before the directory, so the volume's root is
 * changed last: a walk cut short leaves a root that still asks for the change. With the pod's
 * `fsGroupChangePolicy: OnRootMismatch` a root that already has the group, the bits and setgid
 * skips the walk. Root only; a no-op without fsGroup.
 */
import { chmod, lchown, lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../api/types.js';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** securityContext.fsGroupChangePolicy (unset: Always). */
export type FsGroupChangePolicy = 'Always' | 'OnRootMismatch';

/** The pod's fsGroupChangePolicy. Pure. */
export function fsGroupChangePolicyOf(pod: Pod): FsGroupChangePolicy | undefined {
  const policy = (pod.spec.securityContext as { fsGroupChangePolicy?: string } | undefined)?.fsGroupChangePolicy;
  return policy === 'OnRootMismatch' || policy === 'Always' ? policy : undefined;
}

/** The mode upstream gives a file (pure). */
export function ownedMode(mode: number, o: { dir: boolean; readOnly: boolean }): number {
  let m = mode | (o.readOnly ? RO_MASK : RW_MASK);
  if (o.dir) m |= SETGID | EXEC_MASK;
  return m;
}

/**
 * Upstream requiresPermissionChange: whether a volume's root does not already show fsGroup's ownership — its group, a
 * directory with the group's read, write (read-only: read) and search bits, and setgid. Pure.
 */
export function requiresPermissionChange(
  root: { gid: number; mode: number; isDirectory: boolean },
  fsGroup: number,
  readOnly: boolean,
): boolean {
  if (root.gid !== fsGroup || !root.isDirectory) return true;
  const wanted = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  return (root.mode & wanted) !== wanted || (root.mode & SETGID) === 0;
}

/** Applies fsGroup ownership to `path` and everything under it, unless `changePolicy` says the root shows it already. */
export async function setVolumeOwnership(
  path: string,
  fsGroup: number | undefined,
  readOnly: boolean,
  changePolicy?: FsGroupChangePolicy,
): Promise<void> {
  if (fsGroup === undefined || process.getuid?.() !== 0) return;
  if (changePolicy === 'OnRootMismatch') {
    const root = await stat(path).catch(() => undefined);
    if (
      root &&
      !requiresPermissionChange({ gid: root.gid, mode: root.mode, isDirectory: root.isDirectory() }, fsGroup, readOnly)
    )
      return;
  }
  const walk = async (p: string): Promise<void> => {
    const s = await lstat(p);
    if (s.isDirectory()) for (const e of await readdir(p)) await walk(join(p, e));
    await lchown(p, s.uid, fsGroup);
    if (s.isSymbolicLink()) return;
    await chmod(p, ownedMode(s.mode & 0o7777, { dir: s.isDirectory(), readOnly }));
  };
  await walk(path);
}
