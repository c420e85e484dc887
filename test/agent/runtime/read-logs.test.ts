/**
 * The CRI log reader under load (issue 13 items 6 and 7): tailLines reads backwards in bounded
 * chunks (RSS stays flat on a large log), and a follower whose client is gone — even while it is
 * blocked on a full output — returns and closes its file handle.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { readLogs, tailOffset } from '../../../src/agent/runtime/logs/read-logs.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-readlogs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const line = (i: number) => `2026-11-23T06:00:00.000000000Z stdout F line ${i}\n`;
const openFds = () => readdirSync('/proc/self/fd').length;

describe('tailOffset', () => {
  it.each([
    ['', 3, 0],
    ['a\n', 1, 0],
    ['a\nb\n', 1, 2],
    ['a\nb\nc\n', 2, 2],
    ['a\nb\nc', 1, 4],
    ['a\nb\nc', 5, 0],
    ['a\n\nb\n', 2, 2],
    ['a\nb\n', 0, 4],
  ])('%j, last %d → %d', async (text, n, want) => {
    const f = join(dir, `t${Math.random()}`);
    writeFileSync(f, text);
    const fh = await open(f, 'r');
    try {
      expect(await tailOffset(fh, text.length, n)).toBe(want);
    } finally {
      await fh.close();
    }
  });
  it('crosses chunk boundaries', async () => {
    const f = join(dir, 'long');
    const lines = Array.from({ length: 5000 }, (_, i) => `${'x'.repeat(i % 97)}${i}\n`);
    writeFileSync(f, lines.join(''));
    const fh = await open(f, 'r');
    const text = lines.join('');
    try {
      expect(await tailOffset(fh, text.length, 1234)).toBe(text.length - lines.slice(-1234).join('').length);
    } finally {
      await fh.close();
    }
  });
});

describe('readLogs', () => {
  it('without follow answers the log as it was when asked: tailLines=2 is two lines although the container writes meanwhile', async () => {
    const f = join(dir, 'growing.log');
    writeFileSync(f, [1, 2, 3, 4].map(line).join(''));
    const got: string[] = [];
    let n = 5;
    // The "container" writes a line each time the reader hands one to the client.
    const out = new Writable({
      write(chunk: Buffer, _enc, cb) {
        got.push(chunk.toString());
        appendFileSync(f, line(n++));
        cb();
      },
    });
    await readLogs(f, { tailLines: 2 }, out);
    expect(got.join('')).toBe('line 3\nline 4\n');
  });

  // A line no runtime writes (they split at 16 KiB) was kept whole and copied again on every read: a long enough
  // one without a newline took time quadratic in its length and memory without bound.
  it('skips a line longer than 1 MiB, newline or not, and serves the records around it', async () => {
    const f = join(dir, 'overlong.log');
    const huge = `2026-11-23T06:00:00.000000000Z stdout F ${'x'.repeat(3 << 20)}\n`;
    writeFileSync(f, line(1) + huge + line(2) + 'y'.repeat(2 << 20));
    const got: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, cb) {
        got.push(chunk.toString());
        cb();
      },
    });
    await readLogs(f, {}, out);
    expect(got.join('')).toBe('line 1\nline 2\n');
  });

  it('tailLines=1 on a 200 MB log does not read it into memory', async () => {
    const f = join(dir, 'big.log');
    const block = Array.from({ length: 10_000 }, (_, i) => line(i)).join('');
    const fd = openSync(f, 'w');
    closeSync(fd);
    while (
      (await open(f, 'r').then(async (h) => {
        const s = (await h.stat()).size;
        await h.close();
        return s;
      })) <
      200 * 1024 * 1024
    )
      appendFileSync(f, block);
    appendFileSync(f, line(424242));
    global.gc?.();
    const before = process.memoryUsage().rss;
    const outs = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const out = new PassThrough();
        let got = '';
        out.on('data', (d) => {
          got += d;
        });
        await readLogs(f, { tailLines: 1 }, out);
        return got;
      }),
    );
    expect(outs.every((o) => o === 'line 424242\n')).toBe(true);
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
  }, 60_000);

  it('a follower blocked on a client that stopped reading returns and closes its file when the client goes away', async () => {
    const f = join(dir, 'chatty.log');
    writeFileSync(f, Array.from({ length: 50_000 }, (_, i) => line(i)).join(''));
    // Followers watch their log: libuv opens one inotify descriptor for the process at the first watch and keeps it.
    watch(dir).close();
    const base = openFds();
    const sessions = Array.from({ length: 20 }, () => {
      const ac = new AbortController();
      const out = new Writable({
        highWaterMark: 16,
        write(_c, _e, _cb) {
          /* never calls back: a client that never reads */
        },
      });
      const done = readLogs(f, { follow: true }, out, { isRunning: async () => true, signal: ac.signal, periodMs: 20 });
      return { ac, done };
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(openFds()).toBeGreaterThanOrEqual(base + 20);
    for (const s of sessions) s.ac.abort();
    await Promise.all(sessions.map((s) => s.done));
    expect(openFds()).toBe(base);
  });

  describe('follow', () => {
    /**
     * A follower of `f` whose period is a minute: only a watch of the file can wake it sooner. `atEnd()` resolves once
     * it has reached the end of the log (it asks whether the container runs there) and begun to wait.
     */
    const follower = (f: string, running: () => boolean = () => true, periodMs = 60_000) => {
      const ac = new AbortController();
      let ends = 0;
      const endWaiters: { after: number; resolve(): void }[] = [];
      const isRunning = async () => {
        ends++;
        for (const w of endWaiters.filter((x) => ends > x.after)) setTimeout(w.resolve, 50);
        return running();
      };
      const atEnd = () => {
        const after = ends;
        return new Promise<void>((resolve) => endWaiters.push({ after, resolve }));
      };
      let text = '';
      const waiters: { want: string; resolve(): void }[] = [];
      const out = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          text += chunk.toString();
          for (const w of waiters.filter((x) => text.includes(x.want))) w.resolve();
          callback();
        },
      });
      const done = readLogs(f, { follow: true }, out, { isRunning, signal: ac.signal, periodMs });
      const seen = (want: string) =>
        text.includes(want) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ want, resolve }));
      return { ac, done, seen, atEnd, text: () => text, ends: () => ends };
    };

    it('a line appended to the log reaches the follower as it is written, not at the next period', async () => {
      const f = join(dir, 'follow-append.log');
      writeFileSync(f, line(1));
      const session = follower(f);
      await session.atEnd();
      appendFileSync(f, line(2));
      await session.seen('line 2\n');
      appendFileSync(f, line(3) + line(4));
      await session.seen('line 4\n');
      expect(session.text()).toBe('line 1\nline 2\nline 3\nline 4\n');
      session.ac.abort();
      await session.done;
    }, 10_000);

    it('a rotation (the log renamed, a new file at its path) is followed into the new file at once', async () => {
      const f = join(dir, 'follow-rotate.log');
      writeFileSync(f, line(1));
      const session = follower(f);
      await session.atEnd();
      renameSync(f, `${f}.20261130-000000`);
      writeFileSync(f, line(2));
      await session.seen('line 2\n');
      expect(session.text()).toBe('line 1\nline 2\n');
      session.ac.abort();
      await session.done;
    }, 10_000);

    it('asks whether the container runs at most once a second, however often its writes wake the follower', async () => {
      const f = join(dir, 'follow-chatty.log');
      writeFileSync(f, line(0));
      const session = follower(f);
      await session.atEnd();
      const startedMs = performance.now();
      for (let i = 1; i <= 100; i++) {
        appendFileSync(f, line(i));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await session.seen('line 100\n');
      // 100 wake-ups over a second or more (more on a busy machine): the first question, then one a second at most —
      // each a CRI call on a real node.
      const seconds = Math.floor((performance.now() - startedMs) / 1000);
      expect(session.ends()).toBeLessThanOrEqual(seconds + 2);
      session.ac.abort();
      await session.done;
    }, 10_000);

    it('ends once the container no longer runs and its log is drained', async () => {
      const f = join(dir, 'follow-exit.log');
      writeFileSync(f, line(1));
      let running = true;
      const session = follower(f, () => running, 100);
      await session.atEnd();
      appendFileSync(f, line(2));
      running = false;
      await session.done;
      expect(session.text()).toBe('line 1\nline 2\n');
    }, 10_000);
  });
});

describe('a stream picked (PodLogsQuerySplitStreams)', () => {
  it("gives that stream's lines only, partial lines joined as written", async () => {
    const f = join(dir, 'streams');
    writeFileSync(
      f,
      [
        '2026-11-23T06:00:00.000000000Z stdout F out 1',
        '2026-11-23T06:00:01.000000000Z stderr P err ',
        '2026-11-23T06:00:01.100000000Z stderr F 1',
        '2026-11-23T06:00:02.000000000Z stdout F out 2',
        '',
      ].join('\n'),
    );
    const read = async (stream?: 'stdout' | 'stderr') => {
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (c: Buffer) => chunks.push(c));
      await readLogs(f, { stream }, out);
      return Buffer.concat(chunks).toString();
    };
    expect(await read('stdout')).toBe('out 1\nout 2\n');
    expect(await read('stderr')).toBe('err 1\n');
    expect(await read()).toBe('out 1\nerr 1\nout 2\n');
  });
});
