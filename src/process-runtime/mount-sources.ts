/**
 * The sources of a container's mounts on the process runtime, judged before its mount namespace is planned: which may
 * lie on a filesystem that stops answering (and so are looked at by a child process with a deadline), what is at each
 * (a directory or a file: what a missing mount point is made as), and which mounts the runtime can apply at all.
 */
import { lstat, stat } from 'node:fs/promises';
import type * as cri from '../cri/types.js';
import { fileKindApart, VolumeNotAnswering } from '../lib/ask-apart.js';
import { messageOf } from '../lib/errors.js';

/**
 * Whether a mount's source may lie on a filesystem that stops answering: anything but what the kubelet makes under its
 * pod directories (`<kubelet root>/pods/`: its emptyDir, configMap, secret and projected volumes, /etc/hosts, the
 * termination log), and a CSI volume's mount there. Pure.
 */
export function mayStopAnswering(source: string, kubeletRootDir: string): boolean {
  const pods = `${kubeletRootDir.replace(/\/+$/, '')}/pods/`;
  return !source.startsWith(pods) || source.includes('/volumes/kubernetes.io~csi/');
}

/** What is at a mount's source: a directory, a file, or something else (a device, a socket, a link to nothing). */
export type SourceKind = 'dir' | 'file' | 'other';

/** What is at a mount's source, or undefined when nothing. */
async function sourceKind(source: string, askApart: boolean): Promise<SourceKind | undefined> {
  if (askApart) {
    const kind = await fileKindApart(source);
    return kind === undefined ? undefined : kind === 'dir' || kind === 'file' ? kind : 'other';
  }
  // Followed when it is a link; a link that leads nowhere is still there (the mount fails later, saying so).
  const s = await stat(source).catch(() => lstat(source).catch(() => undefined));
  return s === undefined ? undefined : s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'other';
}

/**
 * The mounts the process runtime can apply, with what is at each source: all as root; without root only the
 * skippable file mounts, else an error. A source `mayHang` says may lie on a filesystem that stops answering is looked
 * at by a child process with a deadline (lib/ask-apart.ts), so that it holds none of the process's threads.
 */
export async function effectiveMounts(
  mounts: cri.Mount[],
  isRoot: boolean,
  mayHang: (source: string) => boolean = () => false,
): Promise<{ ok: true; mounts: cri.Mount[]; kinds: ReadonlyMap<string, SourceKind> } | { ok: false; message: string }> {
  const kinds = new Map<string, SourceKind>();
  for (const m of mounts) {
    let kind;
    try {
      kind = await sourceKind(m.host_path, mayHang(m.host_path));
    } catch (err) {
      const why = err instanceof VolumeNotAnswering ? `source: ${err.message}` : messageOf(err);
      return { ok: false, message: `error mounting "${m.host_path}" to "${m.container_path}": ${why}` };
    }
    if (!kind)
      return { ok: false, message: `error mounting "${m.host_path}" to "${m.container_path}": source does not exist` };
    kinds.set(m.host_path, kind);
  }
  if (isRoot) return { ok: true, mounts, kinds };
  for (const m of mounts) {
    if (kinds.get(m.host_path) !== 'file')
      return {
        ok: false,
        message: `the process runtime needs root to mount volumes (mount namespaces): cannot mount "${m.host_path}" at "${m.container_path}"`,
      };
  }
  return { ok: true, mounts: [], kinds };
}
