/**
 * User namespaces on the process runtime (CRI `userns_options` mode POD, a pod with `hostUsers:
 * false`): the container's process runs in a user namespace of its own whose IDs from 0 map onto
 * the pod's host range, so its root is an unprivileged user of the host. The process creates the
 * namespace as the last step of its set-up (after its cgroup, OOM score and mounts, which need the
 * host's root) and a helper of the same set-up writes its ID maps from the host's namespace, as
 * runc's parent does; the command starts once the maps are there. An exec enters the container's
 * namespace (nsenter --user). The host's files keep their owners: those of host IDs outside the
 * range (root's) appear as the overflow user inside, readable where their modes let anyone read
 * them. Supported as root on a kernel with user namespaces.
 */
import { readFileSync } from 'node:fs';
import type * as cri from '../cri/types.js';

/** The pod's ID range, the same for users and groups (the kubelet gives one mapping of each, from 0). */
export interface UserNamespaceRange {
  hostId: number;
  length: number;
}

/**
 * The range CRI `options` asks for: undefined for the node's namespace; throws for mappings the
 * runtime cannot make (several ranges, users and groups apart, a range not from container ID 0).
 */
export function userNamespaceRange(options: cri.UserNamespace | null | undefined): UserNamespaceRange | undefined {
  if (!options || options.mode !== 'POD') return undefined;
  const uids = options.uids ?? [];
  const gids = options.gids ?? [];
  const same = (a: cri.IDMapping, b: cri.IDMapping) =>
    a.host_id === b.host_id && a.container_id === b.container_id && a.length === b.length;
  if (uids.length !== 1 || gids.length !== 1 || !same(uids[0], gids[0]) || uids[0].container_id !== 0)
    throw new Error('user namespace: the process runtime maps one range of IDs from 0, the same for users and groups');
  const { host_id: hostId, length } = uids[0];
  if (
    !Number.isSafeInteger(hostId) ||
    !Number.isSafeInteger(length) ||
    hostId < 1 ||
    length < 1 ||
    hostId + length > 2 ** 32
  )
    throw new Error(`user namespace: invalid range of ${length} IDs from ${hostId}`);
  return { hostId, length };
}

let supported: boolean | undefined;

/**
 * Whether this process can give containers user namespaces: root, on a kernel that allows them.
 * Read once (neither changes while the runtime runs).
 */
export function userNamespacesSupported(): boolean {
  if (supported === undefined) {
    let allowed = false;
    try {
      allowed = Number(readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim()) > 0;
    } catch {
      /* no such setting: no user namespaces */
    }
    supported = process.getuid?.() === 0 && allowed;
  }
  return supported;
}

/**
 * The set-up step that puts the rest of the argv in a new user namespace mapped onto `range`: a
 * helper subshell waits for this PID to be in another user namespace and writes its maps ($$ is
 * the process's own PID through its execs); the process execs `unshare --user` and, inside, waits
 * for its map before it goes on. Run as the host's root, before the user switch.
 */
const SCRIPT = [
  'host=$1 len=$2; shift 2',
  '( while [ /proc/$$/ns/user -ef /proc/self/ns/user ]; do sleep 0.002; done',
  '  echo "0 $host $len" > /proc/$$/uid_map && echo "0 $host $len" > /proc/$$/gid_map ) &',
  "exec unshare --user --keep-caps -- /bin/sh -c 'until read -r m < /proc/self/uid_map; do sleep 0.002; done;" +
    ' exec "$@"\' userns-wait "$@"',
].join('\n');

/** argv prefix that runs what follows in a new user namespace mapped onto `range`. Pure. */
export const newUserNamespaceArgs = (range: UserNamespaceRange): string[] => [
  '/bin/sh',
  '-c',
  SCRIPT,
  'userns-setup',
  String(range.hostId),
  String(range.length),
];

/** The names ($0) of the set-up shells of this step (mount-namespace.ts isSettingUp). */
export const USER_NAMESPACE_SETUP_SHELLS = ['userns-setup', 'userns-wait'];
