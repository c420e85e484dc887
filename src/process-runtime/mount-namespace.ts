/**
 * Container mounts on the process runtime. As root, a container's main process runs in a private
 * mount namespace (util-linux `unshare --mount --propagation private`) where each CRI Mount is a
 * bind mount at its container path (read-only and propagation as asked), then drops to the
 * container's user and groups with `setpriv`; exec, attach-less ExecSync and probes enter that
 * namespace (and root) with `nsenter`.
 *
 * The host filesystem is shared, but nothing is created on it: a mount point that does not exist
 * on the host is made inside the namespace. Its nearest existing ancestor is "shadowed" there: an
 * overlay whose upper layer is on a tmpfs private to the container (the container's scratch dir,
 * under the runtime's state dir), with the ancestor's own submounts bound back on top. A shadow of
 * `/` cannot take effect for a process whose root is `/`, so such a container gets its own root:
 * the host's tree bound recursively under its scratch dir, shadowed there, and entered with
 * `chroot`. Two containers never share a mount point, so concurrent starts cannot race on one.
 * Without root no namespace can be made: file mounts (the kubelet-managed /etc/hosts and
 * termination log) are skipped, and a directory (volume) mount fails CreateContainer clearly.
 */
import { lstat, realpath, rmdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type * as cri from '../cri/types.js';
import { readMountTable } from '../lib/mount-table.js';
import { locateOnHost } from './container-view.js';
import type { SourceKind } from './mount-sources.js';
import { FAIL_FUNCTION } from './set-up-failure.js';
import { newUserNamespaceArgs, USER_NAMESPACE_SETUP_SHELLS, type UserNamespaceRange } from './user-namespace.js';

/** The user a container's processes run as. */
export interface ProcessUser {
  uid?: number;
  gid?: number;
  groups?: number[];
  /**
   * The container's own user namespace (user-namespace.ts): its IDs to make it with (its main
   * process), or the process whose namespace to enter (`pid`: an exec).
   */
  userNamespace?: { range: UserNamespaceRange } | { pid: number };
}

/**
 * The namespace's set-up, run by /bin/sh inside it. Arguments: the scratch dir, 1 for a container
 * root of its own, the working dir, 1 to make it; the shadows (a count, then per shadow its dir, the count of
 * its submounts and their paths relative to it); the mounts (host path, container path, "ro" or
 * "rw", propagation, "d" or "f" for the kind of mount point to make, "-" when it exists); "--";
 * then the command.
 */
const SCRIPT = [
  FAIL_FUNCTION,
  's=$1 c=$2 cwd=$3 w=$4',
  'shift 4',
  'r=',
  'n=$1 i=0',
  // The shadows' layers are reached from inside the scratch dir, by relative paths (and `mount -c`,
  // which keeps them so): a shadow may cover the scratch dir's own path.
  'if [ "$n" != 0 ]; then mount -t tmpfs -o mode=700 tsk-scratch "$s" && cd "$s" || fail "scratch dir $s"; fi',
  'if [ "$c" = 1 ]; then r=$s/root; mkdir "$r" && mount --rbind / "$r" || fail "root of its own"; fi',
  'shift',
  'while [ $i -lt $n ]; do',
  '  i=$((i+1)) d=$1 k=$2',
  '  shift 2',
  '  mkdir "o$i" "u$i" "w$i" && mount -c --rbind "$r$d" "o$i" || fail "shadow of $d"',
  '  mount -c -t overlay tsk-shadow -o "lowerdir=$r$d,upperdir=u$i,workdir=w$i" "$r$d" || fail "shadow of $d"',
  '  while [ $k -gt 0 ]; do',
  // The host's mounts change under a start (another pod's volume unmounted, a network namespace
  // removed): a submount gone since the plan needs no restoring.
  '    if [ -e "o$i/$1" ]; then mount -c --rbind "o$i/$1" "$r$d/$1" || [ ! -e "o$i/$1" ] || fail "submount $d/$1"; fi',
  '    k=$((k-1))',
  '    shift',
  '  done',
  'done',
  'while [ "$1" != "--" ]; do',
  '  t=$r$2',
  '  if [ "$5" = d ]; then mkdir -p "$t" || fail "mount point $2"; fi',
  '  if [ "$5" = f ]; then mkdir -p "$(dirname "$t")" && : > "$t" || fail "mount point $2"; fi',
  '  mount --rbind "$1" "$t" || fail "mount $1 at $2"',
  '  [ "$3" = ro ] && { mount -o remount,bind,ro "$t" || fail "read-only mount $2"; }',
  '  [ "$4" = slave ] && mount --make-rslave "$t"',
  '  [ "$4" = shared ] && mount --make-rshared "$t"',
  '  shift 5',
  'done',
  'shift',
  // A missing working dir is made as runc makes it, as root, before the user switch.
  'if [ "$w" = 1 ] && [ ! -d "$r$cwd" ]; then (umask 022 && mkdir -p -- "$r$cwd") || fail "working dir $cwd"; fi',
  // The working dir is entered here, where it may be a mount point the host does not have.
  'if [ -z "$r" ]; then cd -- "$cwd" || fail "working dir $cwd"; exec "$@"; fi',
  `cd / && exec chroot "$r" /bin/sh -c '${FAIL_FUNCTION}; cd -- "$1" || fail "working dir $1"; shift; exec "$@"' enter-root "$cwd" "$@"`,
].join('\n');

/**
 * argv prefix that switches to user `u` (none when `u` is empty): in a user namespace of its own,
 * made first when the process is the container's main one, the user is its root unless `u` names
 * another. Pure.
 */
export function setprivArgs(u: ProcessUser): string[] {
  const ns = u.userNamespace;
  const options = (uid?: number, gid?: number) => [
    ...(uid !== undefined ? [`--reuid=${uid}`] : []),
    ...(gid !== undefined ? [`--regid=${gid}`] : []),
    ...(u.groups?.length ? [`--groups=${u.groups.join(',')}`] : ['--clear-groups']),
  ];
  if (ns)
    return [
      ...('range' in ns ? newUserNamespaceArgs(ns.range) : []),
      'setpriv',
      // The capabilities kept to switch user in the new namespace (unshare --keep-caps) go: the command has those of
      // its user there, all for its root, none for another user.
      '--inh-caps=-all',
      '--ambient-caps=-all',
      ...options(u.uid ?? 0, u.gid ?? 0),
      '--',
    ];
  if (u.uid === undefined && u.gid === undefined && !u.groups?.length) return [];
  return ['setpriv', ...options(u.uid, u.gid), '--'];
}

/** A mount point to make inside the namespace: a directory or an empty file, after the mount's source. */
export type MissingMountPoint = 'd' | 'f';

/** What the namespace is set up with besides the mounts (from planMountNamespace). */
export interface MountNamespacePlan {
  /** The container's scratch dir: a host directory of the runtime's own, a private tmpfs inside. */
  scratchDir: string;
  /** The container gets a root of its own (a mount point is missing right under `/`). */
  ownRoot: boolean;
  /** Host directories shadowed inside the namespace, shortest first, with their submounts (relative paths). */
  shadows: { dir: string; submounts: string[] }[];
  /** Mount points to make, by container path. */
  missing: ReadonlyMap<string, MissingMountPoint>;
  /**
   * The working dir is made (with its missing parents, mode 0755) once the mounts are in place, as runc makes a missing
   * one: privately, under a shadow, unless a mount holds it.
   */
  makeWorkingDir: boolean;
  /**
   * Where each container path is mounted, by container path, when the namespace is shadowed: its
   * existing part with symbolic links resolved on the host (/var/run → /run), as the mount table
   * and a root of the container's own know it.
   */
  targets: ReadonlyMap<string, string>;
}

/** argv that runs `argv` in a new mount namespace with `mounts` applied as `plan` says, as `user`, in `cwd`. Pure. */
export function wrapInMountNamespace(
  argv: string[],
  mounts: cri.Mount[],
  user: ProcessUser,
  plan: MountNamespacePlan,
  cwd: string,
): string[] {
  const shadows = plan.shadows.flatMap((s) => [s.dir, String(s.submounts.length), ...s.submounts]);
  const specs = mounts.flatMap((m) => [
    m.host_path,
    plan.targets.get(m.container_path) ?? m.container_path,
    m.readonly ? 'ro' : 'rw',
    m.propagation === 'PROPAGATION_HOST_TO_CONTAINER'
      ? 'slave'
      : m.propagation === 'PROPAGATION_BIDIRECTIONAL'
        ? 'shared'
        : 'private',
    plan.missing.get(m.container_path) ?? '-',
  ]);
  const setup = [
    plan.scratchDir,
    plan.ownRoot ? '1' : '0',
    cwd,
    plan.makeWorkingDir ? '1' : '0',
    String(plan.shadows.length),
    ...shadows,
    ...specs,
    '--',
  ];
  return [
    'unshare',
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    SCRIPT,
    'mount-setup',
    ...setup,
    ...setprivArgs(user),
    ...argv,
  ];
}

/**
 * The names ($0) of the shells that set a container's process up before its command runs (here and in the cgroup and
 * OOM wrappers).
 */
const SETUP_SHELLS = new Set([
  'mount-setup',
  'enter-root',
  'cgroup-join',
  'oom-score-adj',
  ...USER_NAMESPACE_SETUP_SHELLS,
]);

/**
 * Whether a process whose argv is `argv` is still being set up (joining its cgroup, making its
 * namespace, entering its root) rather than running the container's command. Pure.
 */
export function isSettingUp(argv: readonly string[]): boolean {
  return argv[0] === 'unshare' || argv[0] === 'chroot' || (argv[1] === '-c' && SETUP_SHELLS.has(argv[3] ?? ''));
}

/**
 * argv that runs `argv` inside the mount namespace and root of process `pid` in directory `cwd`,
 * as `user`. The root and working dir are opened through `/proc/<pid>/root`, which leads into the
 * container's view of the filesystem (its own root, when it has one). Pure.
 */
export function enterMountNamespace(pid: number, argv: string[], o: ProcessUser & { cwd: string }): string[] {
  const root = `/proc/${pid}/root`;
  return [
    'nsenter',
    `--mount=/proc/${pid}/ns/mnt`,
    // nsenter enters the user namespace after the others, while it may still enter them.
    ...(o.userNamespace ? [`--user=/proc/${pid}/ns/user`] : []),
    `--root=${root}`,
    `--wd=${root}${o.cwd}`,
    '--',
    ...setprivArgs(o),
    ...argv,
  ];
}

const isUnder = (path: string, dir: string) => path !== dir && path.startsWith(dir === '/' ? '/' : `${dir}/`);

/**
 * The shadows for mount points missing under `ancestors` (each one's nearest existing ancestor on
 * the host), given the host's mount points: one per ancestor, except an ancestor inside another
 * shadow with no mount point in between (the outer overlay already makes it private). Each
 * shadow's submounts are the mount points under it with no other mount point in between. Pure.
 */
export function shadowsFor(ancestors: string[], mountPoints: string[]): MountNamespacePlan['shadows'] {
  const points = [...new Set(mountPoints)];
  const chosen: string[] = [];
  for (const dir of [...new Set(ancestors)].sort((a, b) => a.length - b.length || (a < b ? -1 : 1))) {
    const covered = chosen.some(
      (outer) => isUnder(dir, outer) && !points.some((m) => isUnder(m, outer) && (m === dir || isUnder(dir, m))),
    );
    if (!covered) chosen.push(dir);
  }
  return chosen.map((dir) => {
    const under = points.filter((m) => isUnder(m, dir));
    const direct = under.filter((m) => !under.some((n) => isUnder(m, n)));
    return { dir, submounts: direct.sort().map((m) => (dir === '/' ? m.slice(1) : m.slice(dir.length + 1))) };
  });
}

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** The nearest ancestor of `path` that exists on the host. */
async function nearestExisting(path: string): Promise<string> {
  let dir = dirname(path);
  while (dir !== '/' && !(await exists(dir))) dir = dirname(dir);
  return dir;
}

/** `path` with the symbolic links of its existing part resolved on the host. */
async function resolvedOnHost(path: string): Promise<string> {
  if (await exists(path)) return realpath(path);
  const existing = await nearestExisting(path);
  const resolved = await realpath(existing);
  return (resolved === '/' ? '' : resolved) + path.slice(existing === '/' ? 0 : existing.length);
}

/**
 * How the namespace of a container with `mounts` is set up: what is missing on the host, and the shadows that make it
 * privately. `kinds`: what is at each mount's source, as effectiveMounts found it (a source is not looked at again: it
 * may be on a filesystem that stops answering). `workingDir`: a working dir to make there.
 */
export async function planMountNamespace(
  mounts: cri.Mount[],
  kinds: ReadonlyMap<string, SourceKind>,
  scratchDir: string,
  o: { workingDir?: string; mountinfo?: string } = {},
): Promise<MountNamespacePlan> {
  const missing = new Map<string, MissingMountPoint>();
  for (const m of mounts) {
    if (missing.has(m.container_path) || (await exists(m.container_path))) continue;
    missing.set(m.container_path, kinds.get(m.host_path) === 'dir' ? 'd' : 'f');
  }
  const makeWorkingDir = o.workingDir !== undefined;
  // Made in a mount, the working dir is the volume's, as runc makes it; elsewhere it needs a shadow.
  const shadowed = [...missing.keys()];
  if (o.workingDir !== undefined && locateOnHost(mounts, o.workingDir).source === undefined)
    shadowed.push(o.workingDir);
  if (!shadowed.length) return { scratchDir, ownRoot: false, shadows: [], missing, makeWorkingDir, targets: new Map() };
  const targets = new Map<string, string>();
  for (const m of mounts) targets.set(m.container_path, await resolvedOnHost(m.container_path));
  const ancestors = await Promise.all(shadowed.map(async (path) => realpath(await nearestExisting(path))));
  const shadows = shadowsFor(
    ancestors,
    (await readMountTable(o.mountinfo)).map((m) => m.path),
  );
  return { scratchDir, ownRoot: ancestors.includes('/'), shadows, missing, makeWorkingDir, targets };
}

/**
 * Removes mount points an earlier version of this runtime created on the host (only empty ones;
 * deepest first): its records of containers still carry them.
 */
export async function removeMountPoints(paths: string[]): Promise<void> {
  for (const p of [...paths].sort((a, b) => b.length - a.length)) {
    const s = await lstat(p).catch(() => undefined);
    if (!s) continue;
    if (s.isDirectory()) await rmdir(p).catch(() => {});
    else if (s.isFile() && s.size === 0) await unlink(p).catch(() => {});
  }
}
