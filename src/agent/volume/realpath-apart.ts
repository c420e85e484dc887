/**
 * realpath(3) of a path in a volume the kubelet does not make itself (hostPath, a PersistentVolume, CSI), asked of a
 * child process (coreutils' `realpath -e`) with a deadline. Such a volume can stop answering — an NFS server gone, a
 * FUSE daemon stuck — and a call on it then blocks in the kernel until it comes back. In-process, that call would
 * hold one of libuv's four threadpool threads for as long: a few containers restarting on such a volume would hold
 * them all, and every file read of the kubelet (manifests, logs, cgroup figures) would wait behind them. A child
 * blocks alone; the kubelet gives up on it at the deadline, and it ends when the volume answers again.
 */
import { spawn } from 'node:child_process';

/** How long a volume may take to answer a realpath before the container's start fails. */
export const VOLUME_ANSWER_TIMEOUT_MS = 10_000;

/** The volume did not answer in time. */
export class VolumeNotAnswering extends Error {}

/** The resolved path, or undefined when it does not exist; rejects with VolumeNotAnswering at the deadline. */
export function realpathApart(path: string, timeoutMs = VOLUME_ANSWER_TIMEOUT_MS): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn('realpath', ['-e', '--', path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d.slice(0, 8192)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d.slice(0, 8192)));
    const timer = setTimeout(() => {
      // A child blocked in the kernel dies only once the call returns; nothing waits for it.
      child.kill('SIGKILL');
      child.unref();
      reject(new VolumeNotAnswering(`no answer within ${timeoutMs / 1000}s`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.replace(/\n$/, ''));
      else if (/No such file or directory|Not a directory/.test(err)) resolve(undefined);
      else reject(new Error(err.trim() || `realpath exited ${code}`));
    });
  });
}
