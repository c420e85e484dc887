/**
 * The file source under hostile and careless input (issue 13 item 1): a "billion laughs" alias
 * bomb, a symlink to a FIFO (must not block), a symlink to /dev/zero (must not be read), empty and
 * null files, dangling symlinks, symlink loops, symlinks to directories, oversized files and a
 * pod name defined twice — each skipped with one log line naming the file, other pods kept.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { FileSource, type FileSourceDeps } from '../../../src/agent/podconfig/file.js';
import { fileSignature, SETTLED_MS, unchangedSince } from '../../../src/agent/podconfig/read-manifest.js';
import {
  decodeManifestsOffThread,
  OFF_THREAD_BYTES,
  type ManifestDecoder,
} from '../../../src/agent/podconfig/decode-off-thread.js';
import type { Pod } from '../../../src/api/types.js';
import { decodeManifests, MAX_MANIFEST_BYTES } from '../../../src/agent/podconfig/decode.js';
import { createLogger } from '../../../src/lib/logger.js';
import { FakeClock, realClock } from '../../../src/lib/clock.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-filesrc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

export const ALIAS_BOMB = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((x, i) => `${x}: &${x} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(',')}]`),
].join('\n');

const pod = (name: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec: {containers: [{name: c, image: busybox, command: [sleep, "1"]}]}\n`;

function source(path: string, extra: Partial<FileSourceDeps> = {}) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      lines.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  const s = new FileSource({
    path,
    nodeName: 'n1',
    periodMs: 1000,
    logger: createLogger({ destination, level: 'info' }),
    clock: realClock,
    ...extra,
  });
  return { s, lines, messages: () => lines.map((l) => String(l.msg)) };
}

describe('decodeManifests bounds', () => {
  it('an alias bomb is an error, not an exception', () => {
    const r = decodeManifests(ALIAS_BOMB, 'bomb.yaml');
    expect(r.pods).toEqual([]);
    expect(r.errors[0]).toMatch(/^bomb\.yaml: .*alias/i);
  });
  it('brackets inside double-quoted strings are text, not nesting', () => {
    const cmd = ['sh', '-c', `echo "${'['.repeat(200)}" '${'{'.repeat(150)}'`];
    const doc = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'i', command: cmd }] },
    };
    for (const [text, name] of [
      [JSON.stringify(doc), 'p.json'],
      [
        `apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    command: ${JSON.stringify(cmd)}\n`,
        'p.yaml',
      ],
    ]) {
      const r = decodeManifests(text, name);
      expect(r.errors).toEqual([]);
      expect(r.pods[0].spec.containers[0].command).toEqual(cmd);
    }
  });
  it('deep nesting, oversized text and huge annotations are errors', () => {
    expect(decodeManifests(`a: ${'['.repeat(150)}${']'.repeat(150)}`, 'deep').errors[0]).toMatch(/^deep: /);
    // JSON takes the native parser's path: the same bounds hold, and a million levels cannot overflow it
    expect(decodeManifests(`{"a": ${'['.repeat(150)}${']'.repeat(150)}}`, 'deep.json').errors).toEqual([
      'deep.json: nested too deeply (more than 100 levels)',
    ]);
    expect(decodeManifests(`${'['.repeat(1e6)}${']'.repeat(1e6)}`, 'deeper.json').errors).toEqual([
      'deeper.json: nested too deeply (more than 100 levels)',
    ]);
    expect(decodeManifests(`[${'0,'.repeat(1_100_000)}0]`, 'wide.json').errors).toEqual([
      'wide.json: too many values (more than 1000000)',
    ]);
    expect(decodeManifests(`[${'[],'.repeat(1_100_000)}[]]`, 'wide.json').errors).toEqual([
      'wide.json: too many values (more than 1000000)',
    ]);
    expect(decodeManifests(`a: [${'{},'.repeat(1_100_000)}{}]`, 'wide.yaml').errors).toEqual([
      'wide.yaml: too many values (more than 1000000)',
    ]);
    // YAML's flow collections too: the parser recursed until the stack overflowed ("Maximum call stack size exceeded",
    // 0.6 s here)
    expect(decodeManifests(`a: ${'['.repeat(40_000)}${']'.repeat(40_000)}`, 'deep.yaml').errors).toEqual([
      'deep.yaml: nested too deeply (more than 100 levels)',
    ]);
    expect(decodeManifests(`a: ${'{b: '.repeat(150)}c${'}'.repeat(150)}`, 'deep.yaml').errors).toEqual([
      'deep.yaml: nested too deeply (more than 100 levels)',
    ]);
    expect(decodeManifests('x'.repeat(MAX_MANIFEST_BYTES + 1), 'big').errors).toEqual([
      `big: manifest is larger than ${MAX_MANIFEST_BYTES} bytes`,
    ]);
    const ann = `apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {a: "${'x'.repeat(300 * 1024)}"}}\nspec: {containers: [{name: c, image: i}]}\n`;
    expect(decodeManifests(ann, 'ann').errors[0]).toContain(
      'metadata.annotations: Too long: must have at most 262144 bytes',
    );
  });
});

describe('FileSource', () => {
  it('skips every hostile or empty entry with one log line each, keeps the good pods, and never blocks', async () => {
    const d = join(dir, 'm');
    mkdirSync(d);
    writeFileSync(join(d, 'good.yaml'), pod('good'));
    writeFileSync(join(d, 'bomb.yaml'), ALIAS_BOMB);
    writeFileSync(join(d, 'empty.yaml'), '');
    writeFileSync(join(d, 'null.yaml'), 'null\n');
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    symlinkSync(join(dir, 'fifo'), join(d, 'fifo.yaml'));
    symlinkSync('/dev/zero', join(d, 'zero.yaml'));
    symlinkSync(join(dir, 'nowhere'), join(d, 'dangling.yaml'));
    symlinkSync(join(d, 'loop-b.yaml'), join(d, 'loop-a.yaml'));
    symlinkSync(join(d, 'loop-a.yaml'), join(d, 'loop-b.yaml'));
    mkdirSync(join(dir, 'adir'));
    symlinkSync(join(dir, 'adir'), join(d, 'dirlink'));
    writeFileSync(join(d, 'huge.yaml'), Buffer.alloc(MAX_MANIFEST_BYTES + 10, 0x20));
    const { s, messages } = source(d);
    const rss = process.memoryUsage().rss;
    const pods = await s.readAll();
    expect(pods.map((p) => p.metadata.name)).toEqual(['good-n1']);
    expect(process.memoryUsage().rss - rss).toBeLessThan(200 * 1024 * 1024);
    const m = messages();
    expect(m).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`could not process manifest file ${join(d, 'bomb.yaml')}: .*alias`, 'i')),
        `skipping manifest ${join(d, 'empty.yaml')}: the file is empty`,
        `skipping manifest ${join(d, 'null.yaml')}: it defines no pods`,
        `skipping manifest ${join(d, 'fifo.yaml')}: not a regular file`,
        `skipping manifest ${join(d, 'zero.yaml')}: not a regular file`,
        `skipping manifest ${join(d, 'dangling.yaml')}: dangling symlink`,
        `skipping manifest ${join(d, 'loop-a.yaml')}: symlink loop`,
        `skipping manifest ${join(d, 'loop-b.yaml')}: symlink loop`,
        `not recursing into manifest path ${join(d, 'dirlink')}: it is a directory`,
        `skipping manifest ${join(d, 'huge.yaml')}: larger than ${MAX_MANIFEST_BYTES} bytes`,
      ]),
    );
    const count = m.length;
    await s.readAll();
    await s.readAll();
    expect(messages().length).toBe(count);
  });

  it('a pod name defined by two files: the first wins, both files are named, once per change', async () => {
    const d = join(dir, 'dup');
    mkdirSync(d);
    writeFileSync(join(d, 'a.yaml'), pod('same'));
    writeFileSync(join(d, 'b.yaml'), pod('same'));
    const { s, messages } = source(d);
    expect((await s.readAll()).length).toBe(1);
    await s.readAll();
    const dup = messages().filter((x) => x.startsWith('duplicate pod name'));
    expect(dup).toEqual([
      `duplicate pod name "same-n1" in namespace "default": defined by ${join(d, 'a.yaml')} and ${join(d, 'b.yaml')}; ignoring the one in ${join(d, 'b.yaml')}`,
    ]);
    writeFileSync(join(d, 'b.yaml'), pod('other'));
    expect((await s.readAll()).map((p) => p.metadata.name).sort((a, b) => String(a).localeCompare(String(b)))).toEqual([
      'other-n1',
      'same-n1',
    ]);
    writeFileSync(join(d, 'b.yaml'), pod('same'));
    await s.readAll();
    expect(messages().filter((x) => x.startsWith('duplicate pod name'))).toHaveLength(2);
  });

  it('rejects as upstream a pod whose name with the node suffix is over 253 characters, and one with a host port twice (regression: both ran)', async () => {
    const d = join(dir, 'invalid');
    mkdirSync(d);
    const long = 'a'.repeat(251); // 251 + "-n1" = 254
    const fits = 'b'.repeat(250); // 250 + "-n1" = 253
    writeFileSync(join(d, 'long.yaml'), pod(long));
    writeFileSync(join(d, 'fits.yaml'), pod(fits));
    writeFileSync(
      join(d, 'ports.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: ports}\nspec:\n  containers:\n  - {name: a, image: i, ports: [{containerPort: 80, hostPort: 8080}]}\n  - {name: b, image: i, ports: [{containerPort: 81, hostPort: 8080}]}\n',
    );
    const { s, messages } = source(d);
    expect((await s.readAll()).map((p) => p.metadata.name)).toEqual([`${fits}-n1`]);
    const errors = messages().filter((x) => x.startsWith('could not process manifest file'));
    expect(errors).toEqual([
      `could not process manifest file ${join(d, 'long.yaml')}: ${join(d, 'long.yaml')}: invalid pod: metadata.name: Invalid value: "${long}-n1": must be no more than 253 characters`,
      `could not process manifest file ${join(d, 'ports.yaml')}: ${join(d, 'ports.yaml')}: invalid pod: spec.containers[1].ports[0].hostPort: Duplicate value: "/TCP/8080"`,
    ]);
  });

  it('a file rewritten with text of the same size is read again, even with its mtime put back', async () => {
    const d = join(dir, 'same-size');
    mkdirSync(d);
    const f = join(d, 'p.yaml');
    writeFileSync(f, pod('aaaa'));
    const old = new Date(Date.now() - 60_000);
    utimesSync(f, old, old);
    const { s } = source(d);
    expect((await s.readAll()).map((p) => p.metadata.name)).toEqual(['aaaa-n1']);
    writeFileSync(f, pod('bbbb'));
    utimesSync(f, old, old); // only the ctime tells now
    expect((await s.readAll()).map((p) => p.metadata.name)).toEqual(['bbbb-n1']);
    expect((await s.readAll()).map((p) => p.metadata.name)).toEqual(['bbbb-n1']);
  });
});

describe('FileSource with long manifests', () => {
  /** A pod manifest longer than OFF_THREAD_BYTES: decoded in a worker. */
  const longPod = (name: string) =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  annotations: {note: "${'n'.repeat(OFF_THREAD_BYTES)}"}\nspec: {containers: [{name: c, image: busybox}]}\n`;
  /** Costly to parse (200,000 YAML values), cheap to write. */
  const heavy = `a: [${'b,'.repeat(200_000)}c]\n`;

  it('a manifest too slow to decode holds up no other file, is reported once and not decoded again until it changes; its pods come when a worker has decoded it', async () => {
    const d = join(dir, 'long');
    mkdirSync(d);
    writeFileSync(join(d, 'a.yaml'), pod('small'));
    writeFileSync(join(d, 'b.yaml'), heavy);
    writeFileSync(join(d, 'c.yaml'), longPod('long'));
    const calls: string[] = [];
    const decode: ManifestDecoder = (text, origin, opts) => {
      calls.push(origin);
      // a short deadline for the heavy text only: a loaded machine may take longer to start a worker
      return decodeManifestsOffThread(text, origin, { ...opts, deadlineMs: text === heavy ? 300 : undefined });
    };
    const { s, messages } = source(d, { decode, periodMs: 60_000 });
    const emits: Pod[][] = [];
    const ac = new AbortController();
    s.start({ signal: ac.signal, emit: (p) => emits.push(p) });
    try {
      // The first delivery waits for the decode (until then no pod counts as gone).
      await until(() => emits.length > 0);
      expect(emits[0].map((p) => p.metadata.name)).toEqual(['small-n1', 'long-n1']);
      expect(emits[0][1].metadata.annotations!.note).toHaveLength(OFF_THREAD_BYTES);
      expect(messages()).toContain(
        `could not process manifest file ${join(d, 'b.yaml')}: ${join(d, 'b.yaml')}: too large or too complex to decode (took longer than 0.3 s)`,
      );
      await s.readAll();
      await s.readAll();
      expect(calls).toEqual([join(d, 'b.yaml'), join(d, 'c.yaml')]);
      // Rewritten valid and long: the others are read at once without it, then it joins them once the worker is done.
      const before = emits.length;
      writeFileSync(join(d, 'b.yaml'), longPod('second'));
      await until(() => emits.some((e) => e.some((p) => p.metadata.name === 'second-n1')));
      expect(emits[before].map((p) => p.metadata.name)).toEqual(['small-n1', 'long-n1']);
      expect(emits.at(-1)!.map((p) => p.metadata.name)).toEqual(['small-n1', 'second-n1', 'long-n1']);
      expect(calls).toEqual([join(d, 'b.yaml'), join(d, 'c.yaml'), join(d, 'b.yaml')]);
    } finally {
      ac.abort();
    }
  });
});

describe('FileSource decodes', () => {
  it('a decode whose text is replaced, or whose file is removed, is stopped: a file rewritten faster than it decodes queues no decodes', async () => {
    const d = join(dir, 'superseded');
    mkdirSync(d);
    const f = join(d, 'p.yaml');
    const signals: AbortSignal[] = [];
    // Decodes that end only when stopped.
    const decode: ManifestDecoder = (_text, origin, opts) =>
      new Promise((resolve) => {
        signals.push(opts!.signal!);
        opts!.signal!.addEventListener('abort', () => resolve({ pods: [], errors: [`${origin}: aborted`] }));
      });
    const { s } = source(d, { decode });
    const long = (n: number) => `# ${String(n).repeat(OFF_THREAD_BYTES)}\n${pod('p')}`;
    writeFileSync(f, long(1));
    await s.read();
    writeFileSync(f, long(2));
    await s.read();
    expect(signals.map((x) => x.aborted)).toEqual([true, false]);
    await s.read();
    expect(signals).toHaveLength(2);
    writeFileSync(f, '');
    await s.read();
    expect(signals.map((x) => x.aborted)).toEqual([true, true]);
    writeFileSync(f, long(3));
    await s.read();
    rmSync(f);
    await s.read();
    expect(signals.map((x) => x.aborted)).toEqual([true, true, true]);
  });
});

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; !ok(); i++) {
    if (i > 300) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('unchangedSince', () => {
  const st = { dev: 1, ino: 2, size: 3, mtimeMs: 10_000, ctimeMs: 10_000 };
  it('trusts an unchanged stat only when the file had settled before it was read', () => {
    const sig = fileSignature(st);
    expect(unchangedSince({ sig, readAtMs: 10_000 + SETTLED_MS + 1 }, st)).toBe(true);
    // Read in the same tick as the last write: a later write could leave the stat as it was.
    expect(unchangedSince({ sig, readAtMs: 10_000 + SETTLED_MS }, st)).toBe(false);
    expect(unchangedSince({ sig, readAtMs: 10_500 }, st)).toBe(false);
  });
  it('any change of device, inode, size, mtime or ctime means read again', () => {
    const read = { sig: fileSignature(st), readAtMs: 1e9 };
    for (const change of [{ dev: 9 }, { ino: 9 }, { size: 9 }, { mtimeMs: 10_000.5 }, { ctimeMs: 10_001 }])
      expect(unchangedSince(read, { ...st, ...change })).toBe(false);
  });
});

describe('FileSource watching a directory', () => {
  it('a manifest deleted and written again with the same text between two reads is removed and added again (upstream inotify); rewritten in place, it is not', async () => {
    const d = join(dir, 'recreate');
    mkdirSync(d);
    const f = join(d, 'p.yaml');
    writeFileSync(f, pod('again'));
    const { s } = source(d);
    const snapshots: string[][] = [];
    const ctl = new AbortController();
    s.start({ signal: ctl.signal, emit: (pods) => snapshots.push(pods.map((p) => String(p.metadata.name))) });
    const settle = async (n: number) => {
      for (let i = 0; i < 100 && snapshots.length < n; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 150));
    };
    await settle(1);
    expect(snapshots).toEqual([['again-n1']]);
    // In place, same text: nothing to tell.
    writeFileSync(f, pod('again'));
    await settle(2);
    expect(snapshots.filter((x) => x.length === 0)).toEqual([]);
    // Deleted and created again at once (as upstream's e2e test does): gone, then back.
    rmSync(f);
    writeFileSync(f, pod('again'));
    await settle(snapshots.length + 2);
    ctl.abort();
    const i = snapshots.findIndex((x) => x.length === 0);
    expect(i).toBeGreaterThan(0);
    expect(snapshots[i + 1]).toEqual(['again-n1']);
  });
});

describe('FileSource timing', () => {
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 250 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
  };
  const names = (pods: Pod[]) => pods.map((p) => String(p.metadata.name));
  it('a burst of writes is read no later than 30 ms after its first event, then again after its last', async () => {
    const d = join(dir, 'burst');
    mkdirSync(d);
    const clock = new FakeClock();
    const { s } = source(d, { clock, periodMs: 20_000 });
    const emits: Pod[][] = [];
    const ac = new AbortController();
    s.start({ signal: ac.signal, emit: (p) => emits.push(p) });
    try {
      await until(() => emits.length > 0);
      for (let i = 0; i < 4; i++) {
        writeFileSync(join(d, `p${i}.yaml`), pod(`p${i}`));
        await new Promise((r) => setTimeout(r, 50));
        // Events keep coming every 10 ms of the source's time: the settle alone would wait for their end.
        clock.advance(10);
      }
      await until(() => emits.length > 1);
      expect(emits.length).toBeGreaterThan(1);
      expect(names(emits[1]).length).toBeLessThan(4);
      clock.advance(30);
      await until(() => names(emits.at(-1)!).length === 4);
      expect(names(emits.at(-1)!)).toEqual(['p0-n1', 'p1-n1', 'p2-n1', 'p3-n1']);
    } finally {
      ac.abort();
    }
  });
});
