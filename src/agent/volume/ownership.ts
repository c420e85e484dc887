/**
 * Upstream SetVolumeOwnership (pkg/volume/volume_linux.go): every file of a volume gets group
 * `fsGroup` and the group bits of `rwMask` (0660) or, for read-only volumes, `roMask` (0440);
 * directories also get setgid and 0110 so new files inherit the group. Symlinks are chowned, not
 * chmodded. Root only; a no-op without fsGroup.
 */
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** The mode upstream gives a file (pure). */
export function ownedMode(mode: number, o: { dir: boolean; readOnly: boolean }): number {
  let m = mode | (o.readOnly ? RO_MASK : RW_MASK);
  if (o.dir) m |= SETGID | EXEC_MASK;
  return m;
}

/** Applies fsGroup ownership to `path` and everything under it. */
export async function setVolumeOwnership(path: string, fsGroup: number | undefined, readOnly: boolean): Promise<void> {
  if (fsGroup === undefined || process.getuid?.() !== 0) return;
  const walk = async (p: string): Promise<void> => {
    const s = await lstat(p);
    await lchown(p, s.uid, fsGroup);
    if (s.isSymbolicLink()) return;
    await chmod(p, ownedMode(s.mode & 0o7777, { dir: s.isDirectory(), readOnly }));
    if (s.isDirectory()) for (const e of await readdir(p)) await walk(join(p, e));
  };
  await walk(path);
}
