/**
 * Container mounts on the process runtime. As root, a container's main process runs in a private
 * mount namespace (util-linux `unshare --mount --propagation private`) where each CRI Mount is a
 * bind mount at its container path (read-only and propagation as asked), then drops to the
 * container's user and groups with `setpriv`; exec, attach-less ExecSync and probes enter that
 * namespace with `nsenter --mount`. The host filesystem is shared, so a missing mount point is
 * created on the host (an empty directory or file) and removed with the last container using it.
 * Without root no namespace can be made: file mounts (the kubelet-managed /etc/hosts and
 * termination log) are skipped, and a directory (volume) mount fails CreateContainer clearly.
 */
import { lstat, mkdir, open, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type * as cri from '../cri/types.js';

/** The user a container's processes run as. */
export interface ProcessUser {
  uid?: number;
  gid?: number;
  groups?: number[];
}

const SCRIPT = [
  'while [ "$1" != "--" ]; do',
  '  mount --rbind "$1" "$2" || exit 127',
  '  [ "$3" = ro ] && { mount -o remount,bind,ro "$2" || exit 127; }',
  '  [ "$4" = slave ] && mount --make-rslave "$2"',
  '  [ "$4" = shared ] && mount --make-rshared "$2"',
  '  shift 4',
  'done',
  'shift',
  'exec "$@"',
].join('\n');

/** argv prefix that switches to user `u` (none when `u` is empty). Pure. */
export function setprivArgs(u: ProcessUser): string[] {
  if (u.uid === undefined && u.gid === undefined && !u.groups?.length) return [];
  return [
    'setpriv',
    ...(u.uid !== undefined ? [`--reuid=${u.uid}`] : []),
    ...(u.gid !== undefined ? [`--regid=${u.gid}`] : []),
    ...(u.groups?.length ? [`--groups=${u.groups.join(',')}`] : ['--clear-groups']),
    '--',
  ];
}

/** argv that runs `argv` in a new mount namespace with `mounts` applied, as `user`. Pure. */
export function wrapInMountNamespace(argv: string[], mounts: cri.Mount[], user: ProcessUser): string[] {
  const specs = mounts.flatMap((m) => [
    m.host_path,
    m.container_path,
    m.readonly ? 'ro' : 'rw',
    m.propagation === 'PROPAGATION_HOST_TO_CONTAINER' ? 'slave' : m.propagation === 'PROPAGATION_BIDIRECTIONAL' ? 'shared' : 'private',
  ]);
  return ['unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', SCRIPT, 'sh', ...specs, '--', ...setprivArgs(user), ...argv];
}

/** argv that runs `argv` inside the mount namespace of process `pid` in directory `cwd`, as `user`. Pure. */
export function enterMountNamespace(pid: number, argv: string[], o: ProcessUser & { cwd: string }): string[] {
  return ['nsenter', `--mount=/proc/${pid}/ns/mnt`, `--wd=${o.cwd}`, '--', ...setprivArgs(o), ...argv];
}

/** The mounts the process runtime can apply: all as root; without root only the skippable file mounts, else an error. */
export async function effectiveMounts(mounts: cri.Mount[], isRoot: boolean): Promise<{ ok: true; mounts: cri.Mount[] } | { ok: false; message: string }> {
  for (const m of mounts) {
    if (
      !(await lstat(m.host_path).then(
        () => true,
        () => false,
      ))
    )
      return { ok: false, message: `error mounting "${m.host_path}" to "${m.container_path}": source does not exist` };
  }
  if (isRoot) return { ok: true, mounts };
  for (const m of mounts) {
    if (!(await stat(m.host_path)).isFile())
      return {
        ok: false,
        message: `the process runtime needs root to mount volumes (mount namespaces): cannot mount "${m.host_path}" at "${m.container_path}"`,
      };
  }
  return { ok: true, mounts: [] };
}

/** Creates missing mount points on the host (directory or empty file, after the source); returns the paths it created, deepest last. */
export async function prepareMountPoints(mounts: cri.Mount[]): Promise<string[]> {
  const created: string[] = [];
  for (const m of mounts) {
    if (
      await lstat(m.container_path).then(
        () => true,
        () => false,
      )
    )
      continue;
    const isDir = (await stat(m.host_path)).isDirectory();
    let first: string | undefined;
    for (
      let p = dirname(m.container_path);
      !(await lstat(p).then(
        () => true,
        () => false,
      ));
      p = dirname(p)
    )
      first = p;
    if (first) {
      await mkdir(dirname(m.container_path), { recursive: true });
      created.push(first);
    }
    if (isDir) await mkdir(m.container_path);
    else await (await open(m.container_path, 'a')).close();
    created.push(m.container_path);
  }
  return created;
}

/** Removes mount points this runtime created (only empty ones; deepest first). */
export async function removeMountPoints(paths: string[]): Promise<void> {
  for (const p of [...paths].sort((a, b) => b.length - a.length)) {
    const s = await lstat(p).catch(() => undefined);
    if (!s) continue;
    if (s.isDirectory()) await rmdir(p).catch(() => {});
    else if (s.isFile() && s.size === 0) await unlink(p).catch(() => {});
  }
}
