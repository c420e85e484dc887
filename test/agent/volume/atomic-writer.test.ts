import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invalidPayloadPath, writeAtomic, type Payload } from '../../../src/agent/volume/atomic-writer.js';

const payload = (o: Record<string, string | [string, number]>): Payload =>
  new Map(
    Object.entries(o).map(([k, v]) => [
      k,
      typeof v === 'string' ? { data: Buffer.from(v), mode: 0o644 } : { data: Buffer.from(v[0]), mode: v[1] },
    ]),
  );
const tsDirs = (d: string) => readdirSync(d).filter((f) => /^\.\.\d{4}_/.test(f));
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tsk-aw-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('invalidPayloadPath', () => {
  it.each([
    ['a', undefined],
    ['a/b/c', undefined],
    ['..a', "invalid path: must not start with '..'"],
    ['a/../b', "invalid path: must not contain '..'"],
    ['/abs', 'invalid path: must be relative path'],
    ['', 'invalid path: must not be empty or contain empty components'],
    ['a//b', 'invalid path: must not be empty or contain empty components'],
    ['x'.repeat(256), 'invalid path: filenames must be less than or equal to 255 characters'],
  ])('%s → %s', (p, want) => expect(invalidPayloadPath(p)).toBe(want));
});

describe('writeAtomic', () => {
  it('writes files into a timestamped dir behind ..data, with user-visible links and modes', async () => {
    const r = await writeAtomic(dir, payload({ a: 'one', 'sub/b': ['two', 0o400] }), {
      now: new Date('2026-11-23T06:40:00Z'),
    });
    expect(r.written).toBe(true);
    expect(readlinkSync(join(dir, '..data'))).toMatch(/^\.\.2026_11_23_06_40_00\./);
    expect(readlinkSync(join(dir, 'a'))).toBe('..data/a');
    expect(readlinkSync(join(dir, 'sub'))).toBe('..data/sub');
    expect(readFileSync(join(dir, 'sub/b'), 'utf8')).toBe('two');
    expect(statSync(join(dir, 'sub/b')).mode & 0o777).toBe(0o400);
    expect(statSync(join(dir, 'a')).mode & 0o777).toBe(0o644);
  });

  it('writes nothing when the payload is unchanged; a mode change alone is a change', async () => {
    await writeAtomic(dir, payload({ a: 'one' }));
    const first = readlinkSync(join(dir, '..data'));
    expect((await writeAtomic(dir, payload({ a: 'one' }))).written).toBe(false);
    expect(readlinkSync(join(dir, '..data'))).toBe(first);
    expect((await writeAtomic(dir, payload({ a: ['one', 0o600] }))).written).toBe(true);
    expect(readlinkSync(join(dir, '..data'))).not.toBe(first);
  });

  it('an update swaps ..data, removes keys no longer in the payload and the old timestamped dir', async () => {
    await writeAtomic(dir, payload({ a: 'one', gone: 'x', 'd/kept': 'k', 'e/dropped': 'y' }));
    await writeAtomic(dir, payload({ a: 'two', 'd/kept': 'k2', fresh: 'n' }));
    expect(readFileSync(join(dir, 'a'), 'utf8')).toBe('two');
    expect(readFileSync(join(dir, 'fresh'), 'utf8')).toBe('n');
    expect(readFileSync(join(dir, 'd/kept'), 'utf8')).toBe('k2');
    expect(() => lstatSync(join(dir, 'gone'))).toThrow();
    expect(() => lstatSync(join(dir, 'e'))).toThrow();
    expect(tsDirs(dir)).toHaveLength(1);
    expect(readdirSync(dir).sort()).toEqual(['..data', tsDirs(dir)[0], 'a', 'd', 'fresh'].sort());
  });

  it('an interrupted write (a timestamped dir never linked, a stray ..data_tmp) is invisible and cleaned up by the next write', async () => {
    await writeAtomic(dir, payload({ a: 'one' }));
    mkdirSync(join(dir, '..2026_01_01_00_00_00.123'));
    writeFileSync(join(dir, '..2026_01_01_00_00_00.123', 'a'), 'half');
    writeFileSync(join(dir, '..data_tmp'), '');
    expect(readFileSync(join(dir, 'a'), 'utf8')).toBe('one');
    expect((await writeAtomic(dir, payload({ a: 'one' }))).written).toBe(false);
    expect(tsDirs(dir)).toHaveLength(1);
    expect(readdirSync(dir)).not.toContain('..data_tmp');
  });

  it('an empty payload leaves an empty volume', async () => {
    await writeAtomic(dir, payload({ a: 'one' }));
    await writeAtomic(dir, new Map());
    expect(readdirSync(dir).filter((f) => !f.startsWith('..'))).toEqual([]);
  });

  it('refuses an invalid path before writing anything', async () => {
    await expect(writeAtomic(dir, payload({ '../escape': 'x' }))).rejects.toThrow("must not contain '..'");
    expect(readdirSync(dir)).toEqual([]);
  });

  it('runs setPerms on the new directory before it becomes visible', async () => {
    const seen: string[] = [];
    await writeAtomic(dir, payload({ a: 'one' }), {
      setPerms: async (ts) => {
        seen.push(ts);
        expect(() => lstatSync(join(dir, '..data'))).toThrow();
      },
    });
    expect(seen).toHaveLength(1);
    expect(join(dir, readlinkSync(join(dir, '..data')))).toBe(seen[0]);
  });
});
