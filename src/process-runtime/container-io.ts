/**
 * Container I/O that outlives the runtime process (daemon mode), as containerd's shim does for
 * containerd: a restarted daemon finds each running container's output and exit code again.
 *
 * Per container, `<io dir>` holds:
 *   stdout, stderr  FIFOs. The container gets them opened read-write, so it never sees EPIPE
 *                   while no runtime reads (the pipe buffer fills, then writes wait); the runtime
 *                   reads them and writes the CRI log. A restarted runtime opens them again.
 *   run.sh          the exit wrapper (the container's main process): runs the command, writes its
 *                   exit status to fd 3 (the `exit` file) and exits with it. Signals reach the
 *                   command (the runtime signals the process group); the wrapper waits them out.
 *   exit            the command's exit status once it ended; its mtime is when.
 * The command's argv is in run.sh, not on the wrapper's command line.
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** `s` quoted for a POSIX shell. Pure. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The exit wrapper running `argv`. Pure. */
export function exitWrapperScript(argv: string[]): string {
  return [
    // A handler (not "ignore") so that the command, which resets handlers on exec, still gets them.
    'trap : HUP INT QUIT TERM USR1 USR2',
    `${argv.map(shellQuote).join(' ')} 3>&-`,
    'rc=$?',
    `printf '%d' "$rc" >&3`,
    'exit "$rc"',
    '',
  ].join('\n');
}

/** The file descriptors a detached container is started with. */
export interface DetachedStdio {
  /** argv of the main process (the exit wrapper). */
  argv: string[];
  stdout: number;
  stderr: number;
  exit: number;
  /** Closes the child's descriptors (once it is spawned) and hands over the read ends. */
  spawned(): { stdout: Socket; stderr: Socket };
  /** Closes everything (the child could not be started). */
  abandon(): void;
}

const openReader = (dir: string, name: string) => openSync(join(dir, name), constants.O_RDONLY | constants.O_NONBLOCK);
const readerSocket = (fd: number) => new Socket({ fd, readable: true, writable: false });

/**
 * Creates `dir` with the FIFOs, the exit wrapper for `argv` and an empty exit file, and opens
 * them. The read ends are opened before the child runs: a FIFO keeps its buffered bytes only
 * while someone has it open, so output of a child that exits at once is not lost.
 */
export async function prepareDetachedIo(dir: string, argv: string[]): Promise<DetachedStdio> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await execFileP('mkfifo', ['-m', '600', join(dir, 'stdout'), join(dir, 'stderr')]);
  await writeFile(join(dir, 'run.sh'), exitWrapperScript(argv), { mode: 0o644 });
  const readers: number[] = [];
  const child: number[] = [];
  const closeAll = (fds: number[]) => {
    for (const fd of fds.splice(0)) closeSync(fd);
  };
  try {
    readers.push(openReader(dir, 'stdout'), openReader(dir, 'stderr'));
    // O_RDWR on a FIFO never blocks and keeps a reader on it for the container's lifetime.
    child.push(
      openSync(join(dir, 'stdout'), 'r+'),
      openSync(join(dir, 'stderr'), 'r+'),
      openSync(join(dir, 'exit'), 'w', 0o644),
    );
  } catch (err) {
    closeAll(readers);
    closeAll(child);
    throw err;
  }
  const [stdout, stderr, exit] = child;
  return {
    argv: ['/bin/sh', join(dir, 'run.sh')],
    stdout,
    stderr,
    exit,
    spawned: () => {
      closeAll(child);
      return { stdout: readerSocket(readers[0]), stderr: readerSocket(readers[1]) };
    },
    abandon: () => {
      closeAll(readers);
      closeAll(child);
    },
  };
}

/** Read ends of a running container's FIFOs (they end once every writer is gone). */
export function openOutputReaders(dir: string): { stdout: Socket; stderr: Socket } {
  const out = openReader(dir, 'stdout');
  let err: number;
  try {
    err = openReader(dir, 'stderr');
  } catch (e) {
    closeSync(out);
    throw e;
  }
  return { stdout: readerSocket(out), stderr: readerSocket(err) };
}

/** True when `dir` holds a detached container's I/O. */
export async function hasDetachedIo(dir: string): Promise<boolean> {
  return stat(join(dir, 'run.sh')).then(
    () => true,
    () => false,
  );
}

/** The exit status the wrapper recorded and when, or undefined when it recorded none (it was killed). */
export async function readExitFile(dir: string): Promise<{ exitCode: number; finishedAtNs: bigint } | undefined> {
  const path = join(dir, 'exit');
  try {
    const text = (await readFile(path, 'utf8')).trim();
    if (!/^\d{1,3}$/.test(text)) return undefined;
    const st = await stat(path, { bigint: true });
    return { exitCode: Number(text), finishedAtNs: st.mtimeNs };
  } catch {
    return undefined;
  }
}
