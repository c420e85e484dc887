/**
 * The kubelet's `--lock-file` (upstream pkg/util/flock and watchForLockfileContention): an exclusive flock(2) on the
 * file, waited for while another process holds it, so a Go kubelet and tskubelet given the same file never run at
 * once. Node has no flock call: util-linux's flock(1) takes the lock and keeps it in a child process whose standard
 * input is a pipe from this one, so the lock goes however the kubelet ends (SIGKILL included). Contention — another
 * process waiting for the lock, or the file removed — is read from /proc/locks, as Node cannot watch inotify's
 * IN_OPEN, upstream's trigger.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { open, readFile, stat } from 'node:fs/promises';
import { sleep, realClock } from './clock.js';

/** A held lock. */
export interface FileLock {
  /**
   * Resolves, with what happened, once another process waits for the lock or the file is removed (checked every
   * `periodMs`); never resolves once `signal` aborts.
   */
  contention(o: { signal: AbortSignal; periodMs?: number }): Promise<string>;
  release(): void;
}

/** A device number's major and minor, as Linux encodes them (glibc's gnu_dev_major / gnu_dev_minor). Pure. */
export function deviceNumbers(dev: number): { major: number; minor: number } {
  const d = BigInt(dev);
  const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn));
  const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn));
  return { major, minor };
}

/**
 * The processes waiting for a flock on the file (`major:minor:inode`, as /proc/locks names it: major and minor in
 * hexadecimal), from /proc/locks' text: its blocked requests, the lines marked `->`. Pure.
 */
export function flockWaiters(procLocks: string, file: { major: number; minor: number; inode: number }): number[] {
  const id = `${file.major.toString(16).padStart(2, '0')}:${file.minor.toString(16).padStart(2, '0')}:${file.inode}`;
  const pids: number[] = [];
  for (const line of procLocks.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== '->' || fields[2] !== 'FLOCK' || fields[6] !== id) continue;
    pids.push(Number(fields[5]));
  }
  return pids;
}

function lockedBy(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('locked')) resolve();
    });
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === 'ENOENT' ? 'flock(1) (util-linux) is not installed' : err.message)),
    );
    child.once('exit', (code) => reject(new Error(stderr.trim() || `flock exited with status ${code}`)));
  });
}

/**
 * Takes an exclusive lock on `path` (created 0600 if absent, as upstream's), waiting while another process holds it.
 */
export async function acquireFileLock(path: string): Promise<FileLock> {
  const created = await open(path, 'a', 0o600);
  await created.close();
  // The child holds the lock while its input stays open; `cat` ends when this process's end of the pipe closes.
  const child = spawn('flock', ['--exclusive', path, 'sh', '-c', 'echo locked && exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  try {
    await lockedBy(child);
  } catch (err) {
    child.kill();
    throw err;
  }
  // The lock does not keep the kubelet's event loop alive.
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref?(): void }).unref?.();
  const { dev, ino } = await stat(path);
  return {
    async contention({ signal, periodMs = 1000 }) {
      const file = { ...deviceNumbers(dev), inode: ino };
      for (;;) {
        await sleep(periodMs, signal, realClock);
        if (signal.aborted) return new Promise<never>(() => {});
        const now = await stat(path).catch(() => undefined);
        if (!now || now.ino !== ino || now.dev !== dev) return `${path} was removed`;
        const waiters = flockWaiters(await readFile('/proc/locks', 'utf8'), file);
        if (waiters.length) return `process ${waiters.join(', ')} waits for the lock on ${path}`;
      }
    },
    release() {
      child.stdin?.end();
      child.kill();
    },
  };
}
