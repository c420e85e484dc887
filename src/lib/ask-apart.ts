/**
 * Questions about a path in a volume the kubelet does not make itself (hostPath, a PersistentVolume, CSI), asked of a
 * child process (coreutils' `realpath`, `stat`, the shell's `test`) with a deadline, by the kubelet and by the embedded
 * runtime. Such a volume can stop answering — an NFS server gone, a FUSE daemon stuck — and a call on it then blocks in
 * the kernel until it comes back. In-process, that call would hold one of libuv's four threadpool threads for as long:
 * a few pods on such a volume would hold them all, and every file read of the kubelet (manifests, logs, cgroup figures)
 * would wait behind them. A child blocks alone; the kubelet gives up on it at the deadline, and it ends when the
 * volume answers again.
 */
import { spawn } from 'node:child_process';

/** How long a volume may take to answer before the operation that asked fails. */
export const VOLUME_ANSWER_TIMEOUT_MS = 10_000;

/** The volume did not answer in time. */
export class VolumeNotAnswering extends Error {}

const MAX_OUTPUT = 8192;

/**
 * Runs `argv` apart: its exit code and (bounded) output; rejects with VolumeNotAnswering at the deadline (none when
 * `timeoutMs` is undefined: the caller waits for the volume, as upstream's would).
 */
function askApart(
  argv: string[],
  timeoutMs: number | undefined,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout = (stdout + d).slice(0, MAX_OUTPUT)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(0, MAX_OUTPUT)));
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
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
      resolve({ code, stdout, stderr });
    });
  });
}

const isMissing = (stderr: string) => /No such file or directory|Not a directory/.test(stderr);

/** realpath(3) of `path`, or undefined when it does not exist. */
export async function realpathApart(path: string, timeoutMs = VOLUME_ANSWER_TIMEOUT_MS): Promise<string | undefined> {
  const r = await askApart(['realpath', '-e', '--', path], timeoutMs);
  if (r.code === 0) return r.stdout.replace(/\n$/, '');
  if (isMissing(r.stderr)) return undefined;
  throw new Error(r.stderr.trim() || `realpath exited ${r.code}`);
}

/** Whether `path` is a file its caller may execute, as execvp(3) would find it. */
export async function isExecutableApart(path: string, timeoutMs = VOLUME_ANSWER_TIMEOUT_MS): Promise<boolean> {
  const r = await askApart(['/bin/sh', '-c', 'test -f "$1" && test -x "$1"', 'is-executable', path], timeoutMs);
  return r.code === 0;
}

/**
 * The group and mode (permission bits) of what `path` leads to, and whether it is a directory; undefined when it
 * cannot be told. No deadline: the caller waits for the volume.
 */
export async function groupAndModeApart(
  path: string,
): Promise<{ gid: number; mode: number; isDirectory: boolean } | undefined> {
  const r = await askApart(['stat', '-L', '-c', '%g %f', '--', path], undefined).catch(() => undefined);
  const [gid, rawMode] = r?.code === 0 ? r.stdout.trim().split(' ') : [];
  if (gid === undefined || rawMode === undefined) return undefined;
  const mode = parseInt(rawMode, 16);
  return { gid: Number(gid), mode: mode & 0o7777, isDirectory: (mode & 0o170000) === 0o040000 };
}

/** What a file is, as the kubelet's checks tell files apart. */
export type FileKind = 'dir' | 'file' | 'socket' | 'char' | 'block' | 'other';

/** stat(1)'s %F names of file types, as kinds; any other (a link, a fifo) is `other`. */
const KINDS: Readonly<Record<string, FileKind>> = {
  directory: 'dir',
  'regular file': 'file',
  'regular empty file': 'file',
  socket: 'socket',
  'character special file': 'char',
  'block special file': 'block',
};

/**
 * What the file at `path` is, following a symbolic link, or the link itself (`other`) when it leads nowhere; undefined
 * when there is nothing.
 */
export async function fileKindApart(path: string, timeoutMs = VOLUME_ANSWER_TIMEOUT_MS): Promise<FileKind | undefined> {
  for (const follow of [true, false]) {
    const r = await askApart(['stat', ...(follow ? ['-L'] : []), '-c', '%F', '--', path], timeoutMs);
    if (r.code === 0) return KINDS[r.stdout.trim()] ?? 'other';
    if (!isMissing(r.stderr)) throw new Error(r.stderr.trim() || `stat exited ${r.code}`);
  }
  return undefined;
}

/** A filesystem's figures as statfs(2) gives them (block counts in `bsize` units, as Node's statfs reports them). */
export interface FilesystemFigures {
  bsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
}

/** statfs(2) of the filesystem holding `path`, asked of `stat -f`. */
export async function statfsApart(path: string, timeoutMs = VOLUME_ANSWER_TIMEOUT_MS): Promise<FilesystemFigures> {
  const r = await askApart(['stat', '-f', '-c', '%s %b %f %a %c %d', '--', path], timeoutMs);
  const figures = r.stdout.trim().split(' ').map(Number);
  if (r.code !== 0 || figures.length !== 6 || figures.some((n) => !Number.isFinite(n)))
    throw new Error(r.stderr.trim() || `stat -f exited ${r.code}`);
  const [bsize, blocks, bfree, bavail, files, ffree] = figures as [number, number, number, number, number, number];
  return { bsize, blocks, bfree, bavail, files, ffree };
}
