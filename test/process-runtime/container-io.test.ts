/**
 * Detached container I/O (daemon mode): the exit wrapper runs any argv verbatim and records the
 * exit status; output survives in the FIFO while no reader is attached, and a new reader gets it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { openOutputReaders, prepareDetachedIo, readExitFile } from '../../src/process-runtime/container-io.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cio-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const collect = (s: Socket) =>
  new Promise<string>((resolve) => {
    let out = '';
    s.on('data', (d: Buffer) => (out += d.toString()));
    s.on('close', () => resolve(out));
  });

async function run(name: string, argv: string[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const io = await prepareDetachedIo(join(dir, name), argv);
  const child = spawn(io.argv[0], io.argv.slice(1), { stdio: ['ignore', io.stdout, io.stderr, io.exit] });
  await new Promise((r) => child.once('spawn', r));
  const readers = io.spawned();
  const [stdout, stderr, code] = await Promise.all([
    collect(readers.stdout),
    collect(readers.stderr),
    new Promise<number | null>((r) => child.once('exit', r)),
  ]);
  return { stdout, stderr, code };
}

describe('detached container I/O', () => {
  it('runs argv verbatim (quotes, spaces, $, newlines) and records the exit status', async () => {
    const args = ["it's", 'a b', '$HOME', 'x\ny', '', '`id`'];
    const r = await run('verbatim', [
      'sh',
      '-c',
      'for a in "$@"; do printf "<%s>" "$a"; done; echo oops >&2; exit 5',
      'sh',
      ...args,
    ]);
    expect(r.stdout).toBe(args.map((a) => `<${a}>`).join(''));
    expect(r.stderr).toBe('oops\n');
    expect(r.code).toBe(5);
    expect((await readExitFile(join(dir, 'verbatim')))?.exitCode).toBe(5);
  });

  it('reports a signalled command as 128+signal, and the wrapper outlives the signal to record it', async () => {
    const r = await run('signalled', ['sh', '-c', 'kill -TERM $$; sleep 5']);
    expect(r.code).toBe(143);
    expect((await readExitFile(join(dir, 'signalled')))?.exitCode).toBe(143);
  });

  it('keeps output written while no reader is attached for the next reader; the fd 3 is not leaked to the command', async () => {
    const d = join(dir, 'buffered');
    const io = await prepareDetachedIo(d, [
      'sh',
      '-c',
      'sleep 0.3; echo one; ls /proc/self/fd/3 2>/dev/null && echo leaked; sleep 0.5; echo two',
    ]);
    const child = spawn(io.argv[0], io.argv.slice(1), {
      stdio: ['ignore', io.stdout, io.stderr, io.exit],
      detached: true,
    });
    await new Promise((r) => child.once('spawn', r));
    const first = io.spawned();
    // The first reader goes away at once (a daemon that stops); the container keeps writing.
    first.stdout.destroy();
    first.stderr.destroy();
    await new Promise((r) => setTimeout(r, 500));
    const again = openOutputReaders(d);
    const [out] = await Promise.all([
      collect(again.stdout),
      collect(again.stderr),
      new Promise((r) => child.once('exit', r)),
    ]);
    expect(out).toBe('one\ntwo\n');
    expect((await readExitFile(d))?.exitCode).toBe(0);
  });

  it('has no exit status when the wrapper itself was killed', async () => {
    const d = join(dir, 'killed');
    const io = await prepareDetachedIo(d, ['sleep', '30']);
    const child = spawn(io.argv[0], io.argv.slice(1), {
      stdio: ['ignore', io.stdout, io.stderr, io.exit],
      detached: true,
    });
    await new Promise((r) => child.once('spawn', r));
    const readers = io.spawned();
    process.kill(-child.pid!, 'SIGKILL');
    await Promise.all([collect(readers.stdout), collect(readers.stderr)]);
    expect(await readExitFile(d)).toBeUndefined();
  });
});
