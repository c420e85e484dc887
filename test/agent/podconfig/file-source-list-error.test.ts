/**
 * A manifest directory that cannot be listed (EMFILE, EACCES, replaced by a file between the stat
 * and the listing): the error is reported once and the pods read last stand, as upstream's file
 * source returns the error and sends no update. readdirSync is made to fail for one directory
 * (root lists any directory, so a permission cannot make it fail here).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it, vi } from 'vitest';

const failing = new Set<string>();
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const readdirSync = ((p: string, ...rest: unknown[]) => {
    if (failing.has(String(p)))
      throw Object.assign(new Error(`EMFILE: too many open files, scandir '${String(p)}'`), { code: 'EMFILE' });
    return (fs.readdirSync as (...a: unknown[]) => unknown)(p, ...rest);
  }) as typeof fs.readdirSync;
  return { ...fs, default: { ...fs, readdirSync }, readdirSync };
});

const { FileSource } = await import('../../../src/agent/podconfig/file.js');
const { createLogger } = await import('../../../src/lib/logger.js');
const { realClock } = await import('../../../src/lib/clock.js');

const dir = mkdtempSync(join(tmpdir(), 'tsk-filesrc-list-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('FileSource listing', () => {
  it('a directory that cannot be listed keeps its pods and is reported once', async () => {
    mkdirSync(join(dir, 'm'));
    writeFileSync(
      join(dir, 'm', 'p.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: kept}\nspec: {containers: [{name: c, image: busybox}]}\n',
    );
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _e, cb) {
        lines.push(String(JSON.parse(String(chunk)).msg));
        cb();
      },
    });
    const s = new FileSource({
      path: join(dir, 'm'),
      nodeName: 'n1',
      periodMs: 1000,
      logger: createLogger({ destination, level: 'info' }),
      clock: realClock,
    });
    const names = async () => (await s.readAll()).map((p) => p.metadata.name);
    expect(await names()).toEqual(['kept-n1']);
    failing.add(join(dir, 'm'));
    expect(await names()).toEqual(['kept-n1']);
    expect(await names()).toEqual(['kept-n1']);
    expect(lines.filter((l) => l.startsWith(`cannot list manifest path ${join(dir, 'm')}: EMFILE`))).toHaveLength(1);
    failing.clear();
    rmSync(join(dir, 'm', 'p.yaml'));
    expect(await names()).toEqual([]);
  });
});
