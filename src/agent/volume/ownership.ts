/**
 * Upstream SetVolumeOwnership (pkg/volume/volume_linux.go): every file of a volume gets group
 * `fsGroup` and the group bits of `rwMask` (0660) or, for read-only volumes, `roMask` (0440);
 * directories also get setgid and 0110 so new files inherit the group. Symlinks are chowned, not
 * chmodded. The walk visits a directory's contents before the directory, so the volume's root is
 * changed last: a walk cut short leaves a root that still asks for the change. With the pod's
 * `fsGroupChangePolicy: OnRootMismatch` a root that already has the group, the bits and setgid
 * skips the walk. A volume on a filesystem that may stop answering is walked by a child process (ownership-apart.ts).
 * Root only; a no-op without fsGroup.
 */
import { chmod, lchown, lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import { onFilesystemThatMayStopAnswering, readMountTable } from '../../lib/mount-table.js';
import { podRef, type EventSink } from '../events/recorder.js';
import { setOwnershipApart } from './ownership-apart.js';
import { groupAndModeApart } from '../../lib/ask-apart.js';

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

/** Upstream's waits before a long ownership change is reported, and between its reports. */
export const OWNERSHIP_FIRST_REPORT_MS = 30_000;
export const OWNERSHIP_REPORT_EVERY_MS = 60_000;

/** Where a long ownership change is reported: the pod's events and the kubelet's log (upstream's progress notifier). */
export interface OwnershipProgress {
  pod: Pod;
  events?: EventSink;
  logger?: Logger;
  /** For tests: when the first report comes and how often the next ones do. */
  firstAfterMs?: number;
  everyMs?: number;
}

/** The part of `dir` from the pod's UID on, as upstream's events name a volume's directory. Pure. */
export function dirnameToReport(dir: string, podUid: string): string {
  const at = podUid ? dir.indexOf(podUid) : -1;
  return at < 0 ? dir : dir.slice(at);
}

/**
 * Applies fsGroup ownership to `path` and everything under it, unless `changePolicy` says the root shows it already.
 * A change still running after 30 s is reported as upstream's is: a Warning `VolumePermissionChangeInProgress` event on
 * the pod, then another every minute with the files done so far. `kubeletMade`: a volume the kubelet makes in its
 * pod directories (emptyDir, configMap, secret, projected), whose filesystem is not looked up.
 */
export async function setVolumeOwnership(
  path: string,
  fsGroup: number | undefined,
  o: { readOnly: boolean; changePolicy?: FsGroupChangePolicy; progress?: OwnershipProgress; kubeletMade?: boolean },
): Promise<void> {
  if (fsGroup === undefined || process.getuid?.() !== 0) return;
  const { readOnly } = o;
  // A volume of someone else's that may stop answering (NFS, FUSE) is walked by a child process
  // (ownership-apart.ts); the mount table is read now, as the volume was mounted a moment ago.
  const apart = !o.kubeletMade && (await onFilesystemThatMayStopAnswering(path, readMountTable()));
  if (o.changePolicy === 'OnRootMismatch') {
    const root = apart
      ? await groupAndModeApart(path)
      : await stat(path).then(
          (s) => ({ gid: s.gid, mode: s.mode, isDirectory: s.isDirectory() }),
          () => undefined,
        );
    if (root && !requiresPermissionChange(root, fsGroup, readOnly)) return;
  }
  let files = 0;
  const stopReports = o.progress ? reportProgress(path, o.progress, () => files) : () => {};
  const walk = async (p: string): Promise<void> => {
    const s = await lstat(p);
    if (s.isDirectory()) for (const e of await readdir(p)) await walk(join(p, e));
    files++;
    await lchown(p, s.uid, fsGroup);
    if (s.isSymbolicLink()) return;
    await chmod(p, ownedMode(s.mode & 0o7777, { dir: s.isDirectory(), readOnly }));
  };
  try {
    if (apart) await setOwnershipApart(path, fsGroup, readOnly, () => files++);
    else await walk(path);
  } finally {
    stopReports();
  }
}

/** Starts upstream's reports of a long ownership change of `dir`; returns their stop. */
function reportProgress(dir: string, p: OwnershipProgress, filesDone: () => number): () => void {
  const shown = dirnameToReport(dir, p.pod.metadata.uid ?? '');
  const event = (message: string) =>
    p.events?.record(podRef(p.pod), 'Warning', 'VolumePermissionChangeInProgress', message);
  let every: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    p.logger?.warn(
      `Setting volume ownership for ${dir} and fsGroup set. If the volume has a lot of files then setting volume ownership could be slow, see https://github.com/kubernetes/kubernetes/issues/69699`,
    );
    event(
      `Setting volume ownership for ${shown} is taking longer than expected, consider using OnRootMismatch - https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#configure-volume-permission-and-ownership-change-policy-for-pods`,
    );
    every = setInterval(() => {
      const message = `Setting volume ownership for ${shown}, processed ${filesDone()} files.`;
      p.logger?.warn(message);
      event(message);
    }, p.everyMs ?? OWNERSHIP_REPORT_EVERY_MS);
  }, p.firstAfterMs ?? OWNERSHIP_FIRST_REPORT_MS);
  return () => {
    clearTimeout(first);
    clearInterval(every);
  };
}
