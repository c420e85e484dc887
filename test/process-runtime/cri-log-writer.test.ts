import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriLogWriter } from '../../src/process-runtime/cri-log-writer.js';

/** The records of a CRI log file as [stream, tag, content]. */
function records(path: string): [string, string, string][] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^\S+ (stdout|stderr) ([PF]) (.*)$/.exec(line);
      if (!m) throw new Error(`not a CRI log record: ${line}`);
      return [m[1], m[2], m[3]];
    });
}

describe('CriLogWriter', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cri-log-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('has a record in the file when write() returns, so a runtime killed next loses nothing it read', () => {
    const log = new CriLogWriter(join(dir, 'c', '0.log'));
    log.write('stdout', Buffer.from('first\nsecond\n'));
    // No await: a SIGKILL could come now. An async write queue would still hold both lines.
    expect(records(join(dir, 'c', '0.log'))).toEqual([
      ['stdout', 'F', 'first'],
      ['stdout', 'F', 'second'],
    ]);
    void log.close();
  });

  it('keeps an unterminated line until its newline, per stream', async () => {
    const path = join(dir, '0.log');
    const log = new CriLogWriter(path);
    log.write('stdout', Buffer.from('hel'));
    log.write('stderr', Buffer.from('oops\n'));
    log.write('stdout', Buffer.from('lo\nrest'));
    expect(records(path)).toEqual([
      ['stderr', 'F', 'oops'],
      ['stdout', 'F', 'hello'],
    ]);
    await log.close();
    expect(records(path).at(-1)).toEqual(['stdout', 'F', 'rest']);
  });

  it('splits a line longer than the limit into P records ending with F', async () => {
    const path = join(dir, '0.log');
    const log = new CriLogWriter(path, 4);
    log.write('stdout', Buffer.from('abcdefghij\n'));
    await log.close();
    expect(records(path)).toEqual([
      ['stdout', 'P', 'abcd'],
      ['stdout', 'P', 'efgh'],
      ['stdout', 'F', 'ij'],
    ]);
  });

  it('detach leaves the open line partial for the next writer to complete', async () => {
    const path = join(dir, '0.log');
    const first = new CriLogWriter(path);
    first.write('stdout', Buffer.from('half'));
    await first.detach();
    const second = new CriLogWriter(path);
    second.write('stdout', Buffer.from(' done\n'));
    await second.close();
    expect(records(path)).toEqual([
      ['stdout', 'P', 'half'],
      ['stdout', 'F', ' done'],
    ]);
  });

  it('writes to the new file after reopen (log rotation)', async () => {
    const path = join(dir, '0.log');
    const log = new CriLogWriter(path);
    log.write('stdout', Buffer.from('old\n'));
    renameSync(path, `${path}.1`);
    log.reopen();
    log.write('stdout', Buffer.from('new\n'));
    await log.close();
    expect(records(`${path}.1`)).toEqual([['stdout', 'F', 'old']]);
    expect(records(path)).toEqual([['stdout', 'F', 'new']]);
  });

  it('refuses a log path it cannot create, with the reason', () => {
    writeFileSync(join(dir, 'file'), '');
    expect(() => new CriLogWriter(join(dir, 'file', '0.log'))).toThrow(/EEXIST: file already exists/);
  });
});

describe('CriLogWriter on a full disk (regression: output was dropped with no trace in the log)', () => {
  it('records how much was dropped once it can write again, and the records stay parseable', async () => {
    const { execFileSync } = await import('node:child_process');
    const dir = mkdtempSync(join(tmpdir(), 'cri-log-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tsk-logfull', dir]);
    try {
      const log = new CriLogWriter(join(dir, '0.log'));
      log.write('stdout', Buffer.from('before\n'));
      writeFileSync(join(dir, 'filler'), Buffer.alloc(200 << 10));
      log.write('stdout', Buffer.from(`${'x'.repeat(1000)}\n`.repeat(100)));
      rmSync(join(dir, 'filler'));
      log.write('stdout', Buffer.from('after\n'));
      await log.close();
      const all = readFileSync(join(dir, '0.log'), 'utf8').split('\n').filter(Boolean);
      // Whatever fitted of the big write may be there, then the notice and the next line, each a whole record.
      const last = all.slice(-2).map((line) => /^\S+ (stdout|stderr) ([PF]) (.*)$/.exec(line)?.slice(1));
      expect(last[0]?.[0]).toBe('stderr');
      expect(last[0]?.[2]).toMatch(
        /^\[process runtime\] \d+ bytes of this container's log were dropped: no space left on device$/,
      );
      expect(last[1]).toEqual(['stdout', 'F', 'after']);
      expect(all[0]).toMatch(/ stdout F before$/);
    } finally {
      execFileSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
