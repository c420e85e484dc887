/** writeSmallFile: its directory made, its content written, its mode exact whatever the umask when asked. */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSmallFile } from '../../src/lib/fs-util.js';

describe('writeSmallFile', () => {
  it('makes the directories, writes the file, and sets 0666 exactly under a 022 umask; a failure rejects', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsk-fsu-'));
    const old = process.umask(0o022);
    try {
      const file = join(dir, 'containers', 'main', 'abcd0123');
      await writeSmallFile(file, '', 0o666, { chmod: true });
      expect(statSync(file).mode & 0o777).toBe(0o666);
      const hosts = join(dir, 'etc-hosts');
      await writeSmallFile(hosts, '127.0.0.1 localhost\n', 0o644);
      expect(readFileSync(hosts, 'utf8')).toBe('127.0.0.1 localhost\n');
      expect(statSync(hosts).mode & 0o777).toBe(0o644);
      await expect(writeSmallFile(join(hosts, 'below-a-file'), 'x', 0o644)).rejects.toThrow(/ENOTDIR|EEXIST/);
    } finally {
      process.umask(old);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
