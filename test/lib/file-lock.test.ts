/**
 * --lock-file's lock (lib/file-lock.ts) against real flock(2) users: util-linux's flock(1), as any other kubelet or
 * tool takes the same lock. Held, nobody else gets it; a process waiting for it is seen in /proc/locks; the file
 * removed is seen; released, the waiter goes on.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireFileLock, deviceNumbers, flockWaiters } from '../../src/lib/file-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-file-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether another process could take the lock now (flock --nonblock). */
const free = (path: string) => spawnSync('flock', ['--nonblock', path, 'true']).status === 0;

describe('the /proc/locks reading', () => {
  it('finds the processes blocked on a flock of the file, not its holder nor other files', () => {
    const text = [
      '1: FLOCK  ADVISORY  WRITE 31613 fe:00:2146342 0 EOF',
      '1: -> FLOCK  ADVISORY  WRITE 31617 fe:00:2146342 0 EOF',
      '2: POSIX  ADVISORY  WRITE 500 fe:00:2146342 0 EOF',
      '3: -> FLOCK  ADVISORY  WRITE 777 fe:00:999 0 EOF',
    ].join('\n');
    expect(flockWaiters(text, { major: 0xfe, minor: 0, inode: 2146342 })).toEqual([31617]);
    expect(deviceNumbers(65024)).toEqual({ major: 0xfe, minor: 0 });
    expect(deviceNumbers(0x10302)).toEqual({ major: 0x103, minor: 2 });
  });
});

describe('the lock file', () => {
  it('is held until released; a process waiting for it is contention; then it gets the lock', async () => {
    const path = join(dir, 'kubelet.lock');
    const lock = await acquireFileLock(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(free(path)).toBe(false);
    const watch = new AbortController();
    const contention = lock.contention({ signal: watch.signal, periodMs: 100 });
    const waiter = spawn('flock', ['--exclusive', path, 'true']);
    const exited = new Promise<number | null>((resolve) => waiter.once('exit', resolve));
    expect(await contention).toBe(`process ${waiter.pid} waits for the lock on ${path}`);
    lock.release();
    expect(await exited).toBe(0);
    expect(free(path)).toBe(true);
  });

  it('a second holder waits for the first; the file removed is contention too', async () => {
    const path = join(dir, 'second.lock');
    const first = await acquireFileLock(path);
    let secondHeld = false;
    const second = acquireFileLock(path).then((lock) => {
      secondHeld = true;
      return lock;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(secondHeld).toBe(false);
    first.release();
    const lock = await second;
    const watch = new AbortController();
    const contention = lock.contention({ signal: watch.signal, periodMs: 100 });
    rmSync(path);
    expect(await contention).toBe(`${path} was removed`);
    lock.release();
  });
});
