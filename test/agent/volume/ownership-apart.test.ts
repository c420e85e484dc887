/**
 * fsGroup ownership of a volume that may stop answering, done by a child process (ownership-apart.ts): it leaves
 * every file as the in-process walk does (group, mode bits, setuid and setgid kept, links' group only), and a walk
 * blocked on a filesystem that does not answer holds none of the kubelet's threads. Regression: each in-process
 * walk of such a volume held one of libuv's four threadpool threads, so after four the kubelet could read no file.
 * Root; the blocked walks also need FUSE and Debian's python3-fusepy (CI installs it).
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { setOwnershipApart } from '../../../src/agent/volume/ownership-apart.js';
import { groupAndModeApart } from '../../../src/lib/ask-apart.js';
import { setVolumeOwnership } from '../../../src/agent/volume/ownership.js';
import { hangFsAvailable, startHangFs, type HangFs } from '../../fixtures/hang-fs.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-owner-apart-'));
let hangFs: HangFs | undefined;
afterAll(() => {
  hangFs?.stop();
  rmSync(base, { recursive: true, force: true });
});
const FS_GROUP = 4321;
const isRoot = process.getuid?.() === 0;

/** A volume of every kind of file the walk meets, with their modes. */
function makeVolume(root: string): void {
  mkdirSync(join(root, 'dir', 'nested'), { recursive: true });
  mkdirSync(join(root, 'private'));
  const files: [string, number][] = [
    ['plain', 0o644],
    ['secret', 0o600],
    ['tool', 0o755],
    ['setuid-tool', 0o4755],
    ['setgid-tool', 0o2755],
    ['dir/inner', 0o640],
    ['dir/nested/deep', 0o400],
  ];
  for (const [name, mode] of files) {
    writeFileSync(join(root, name), name);
    chmodSync(join(root, name), mode);
  }
  chmodSync(join(root, 'private'), 0o700);
  chmodSync(root, 0o755);
  symlinkSync('plain', join(root, 'link'));
}

/** Every file's group and mode (links: group only), by its path in the volume. */
function ownership(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string) => {
    const s = lstatSync(p);
    out[relative(root, p) || '.'] = `${s.gid} ${s.isSymbolicLink() ? 'link' : (s.mode & 0o7777).toString(8)}`;
    if (s.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
  };
  walk(root);
  return out;
}

describe.runIf(isRoot)('ownership in a child process', () => {
  it.each([false, true])('leaves every file as the in-process walk does (read-only %s)', async (readOnly) => {
    const inProcess = join(base, `in-process-${readOnly}`);
    const apart = join(base, `apart-${readOnly}`);
    for (const root of [inProcess, apart]) {
      mkdirSync(root);
      makeVolume(root);
    }
    await setVolumeOwnership(inProcess, FS_GROUP, { readOnly });
    let files = 0;
    await setOwnershipApart(apart, FS_GROUP, readOnly, () => files++);
    const expected = ownership(inProcess);
    expect(ownership(apart)).toEqual(expected);
    expect(files).toBe(Object.keys(expected).length);
    // The in-process walk's result, to know the comparison means something.
    expect(expected['setuid-tool']).toBe(`${FS_GROUP} ${(readOnly ? 0o4755 : 0o4775).toString(8)}`);
    expect(expected['.']).toBe(`${FS_GROUP} ${(readOnly ? 0o2755 : 0o2775).toString(8)}`);
    expect(expected.link).toBe(`${FS_GROUP} link`);
  });

  it("reads a root's group and mode", async () => {
    const root = join(base, 'stat');
    mkdirSync(root);
    chmodSync(root, 0o2750);
    const s = lstatSync(root);
    expect(await groupAndModeApart(root)).toEqual({ gid: s.gid, mode: 0o2750, isDirectory: true });
    writeFileSync(join(root, 'f'), '');
    expect((await groupAndModeApart(join(root, 'f')))?.isDirectory).toBe(false);
    expect(await groupAndModeApart(join(root, 'none'))).toBeUndefined();
  });

  it.runIf(hangFsAvailable)(
    'holds none of the threads while the volume does not answer',
    async () => {
      hangFs = await startHangFs(join(base, 'hang'));
      // More walks than libuv has threadpool threads, each on a volume that does not answer.
      const walks = [0, 1, 2, 3, 4, 5].map((i) =>
        setVolumeOwnership(join(hangFs!.mountpoint, 'hang', `v${i}`), FS_GROUP, { readOnly: false }).catch(
          (err: unknown) => err,
        ),
      );
      // The kubelet still reads its files.
      const local = join(base, 'local');
      writeFileSync(local, 'still read');
      const read = await Promise.race([
        readFile(local, 'utf8'),
        new Promise((resolve) => setTimeout(() => resolve('no answer'), 5000)),
      ]);
      expect(read).toBe('still read');
      // Once the server is back the walks end, with the volume's error.
      hangFs.release();
      const ended = await Promise.all(walks);
      for (const e of ended) expect(e).toBeInstanceOf(Error);
    },
    30_000,
  );
});
