/**
 * A container's view of the filesystem on the process runtime: the host's, with each of the container's mounts over
 * it. The runtime checks a container's working dir and command where the container will look for them, before it
 * starts it or runs an exec in it: a command in a volume (`/scripts/run.sh` of a configMap mounted at `/scripts`) lies
 * under the volume's host path, not at that path on the host.
 *
 * A path that may stop answering — in a mount whose source may (mount-sources.ts mayStopAnswering), or on a host
 * filesystem that waits on a server or a daemon (NFS, FUSE, …: lib/mount-table.ts) — is looked at by a child process
 * with a deadline (lib/ask-apart.ts), so that it holds none of the process's threads, however often a start is tried
 * again. Any other path is looked at in-process, with the deadline too: should a link lead from a local filesystem into
 * one that stops answering, one threadpool thread waits, but neither the event loop nor the start.
 */
import { access, constants, stat } from 'node:fs/promises';
import { posix } from 'node:path';
import type * as cri from '../cri/types.js';
import { fileKindApart, isExecutableApart, VOLUME_ANSWER_TIMEOUT_MS, VolumeNotAnswering } from '../lib/ask-apart.js';
import { onFilesystemThatMayStopAnswering } from '../lib/mount-table.js';

/** The mounts a container sees, and which of their sources may stop answering. */
export interface ContainerView {
  mounts: readonly cri.Mount[];
  mayHang(source: string): boolean;
}

/** Where `path` (absolute, as the container sees it) lies on the host, and the source of the mount it is in. Pure. */
export function locateOnHost(mounts: readonly cri.Mount[], path: string): { hostPath: string; source?: string } {
  const target = posix.normalize(path);
  let deepest: { at: string; mount: cri.Mount } | undefined;
  for (const mount of mounts) {
    const at = posix.normalize(mount.container_path);
    const holds = target === at || target.startsWith(at === '/' ? '/' : `${at}/`);
    if (holds && (!deepest || at.length > deepest.at.length)) deepest = { at, mount };
  }
  if (!deepest) return { hostPath: target };
  return {
    hostPath: posix.join(deepest.mount.host_path, target.slice(deepest.at.length)),
    source: deepest.mount.host_path,
  };
}

/** Where `path` of `view` lies on the host, and whether it is to be looked at apart. */
async function placeOf(view: ContainerView, path: string): Promise<{ hostPath: string; apart: boolean }> {
  const { hostPath, source } = locateOnHost(view.mounts, path);
  if (source !== undefined && view.mayHang(source)) return { hostPath, apart: true };
  return { hostPath, apart: await onFilesystemThatMayStopAnswering(hostPath) };
}

/** `question` answered within the volume deadline, else VolumeNotAnswering (the call itself goes on, unawaited). */
function withinDeadline<T>(question: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new VolumeNotAnswering(`no answer within ${VOLUME_ANSWER_TIMEOUT_MS / 1000}s`)),
      VOLUME_ANSWER_TIMEOUT_MS,
    );
  });
  return Promise.race([question, deadline]).finally(() => clearTimeout(timer));
}

/**
 * What is at `path` in `view`: a directory, something else, or nothing; throws VolumeNotAnswering past the deadline.
 */
export async function kindIn(view: ContainerView, path: string): Promise<'dir' | 'other' | undefined> {
  const { hostPath, apart } = await placeOf(view, path);
  if (apart) {
    const kind = await fileKindApart(hostPath);
    return kind === undefined ? undefined : kind === 'dir' ? 'dir' : 'other';
  }
  return withinDeadline(
    stat(hostPath).then(
      (s) => (s.isDirectory() ? 'dir' : 'other'),
      () => undefined,
    ),
  );
}

/** Whether `path` is an executable file in `view`. */
async function isExecutableIn(view: ContainerView, path: string): Promise<boolean> {
  const { hostPath, apart } = await placeOf(view, path);
  if (apart) return isExecutableApart(hostPath);
  const executable = async () => {
    try {
      if (!(await stat(hostPath)).isFile()) return false;
      await access(hostPath, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  return withinDeadline(executable());
}

/**
 * The path of command `command` in `view`, resolved as execvp would (a name without a slash is looked for in
 * `pathEnv`, a relative path from `cwd`), or undefined when nothing executable is there. Throws VolumeNotAnswering
 * past the deadline.
 */
export async function resolveExecutableIn(
  view: ContainerView,
  command: string,
  pathEnv: string | undefined,
  cwd: string,
): Promise<string | undefined> {
  const candidates = command.includes('/')
    ? [posix.resolve(cwd, command)]
    : (pathEnv ?? '')
        .split(':')
        .filter(Boolean)
        .map((dir) => posix.resolve(cwd, dir, command));
  for (const candidate of candidates) if (await isExecutableIn(view, candidate)) return candidate;
  return undefined;
}
