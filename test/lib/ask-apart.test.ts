/**
 * Questions asked of a child process with a deadline (lib/ask-apart.ts): the same answers as the calls in-process,
 * and VolumeNotAnswering from a filesystem that does not answer (FUSE and Debian's python3-fusepy, as root).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { statfsApart, VolumeNotAnswering } from '../../src/lib/ask-apart.js';
import { hangFsAvailable, startHangFs, type HangFs } from '../fixtures/hang-fs.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-ask-apart-'));
let hangFs: HangFs | undefined;
afterAll(() => {
  hangFs?.stop();
  rmSync(base, { recursive: true, force: true });
});

describe('statfsApart', () => {
  it.each([base, '/'])("gives statfs(2)'s figures for %s", async (path) => {
    const [apart, inProcess] = await Promise.all([statfsApart(path), statfs(path)]);
    expect({ bsize: apart.bsize, blocks: apart.blocks, files: apart.files }).toEqual({
      bsize: inProcess.bsize,
      blocks: inProcess.blocks,
      files: inProcess.files,
    });
    expect(apart.bavail).toBeLessThanOrEqual(apart.bfree);
    expect(apart.bfree).toBeLessThanOrEqual(apart.blocks);
  });

  it('fails for a path that is not there', async () => {
    await expect(statfsApart(join(base, 'none'))).rejects.toThrow(/No such file or directory/);
  });

  it.runIf(hangFsAvailable)('gives up on a filesystem that does not answer', async () => {
    hangFs = await startHangFs(join(base, 'hang'));
    await expect(statfsApart(join(hangFs.mountpoint, 'hang', 'pv'), 1000)).rejects.toBeInstanceOf(VolumeNotAnswering);
  });
});
