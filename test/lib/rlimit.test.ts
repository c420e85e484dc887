/**
 * The kubelet's open-files limit (maxOpenFiles): read from /proc, set on a process with prlimit, a failure returned for
 * logging.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseOpenFilesLimit, setOpenFilesLimit } from '../../src/lib/rlimit.js';

describe('open-files limit', () => {
  it('reads RLIMIT_NOFILE from /proc/<pid>/limits', () => {
    expect(
      parseOpenFilesLimit(
        'Max processes   1 1 processes\nMax open files            1024                 524288               files\n',
      ),
    ).toEqual({
      soft: 1024,
      hard: 524288,
    });
    expect(parseOpenFilesLimit('Max open files unlimited unlimited files\n')).toEqual({
      soft: Infinity,
      hard: Infinity,
    });
    expect(parseOpenFilesLimit('')).toBeUndefined();
  });

  it("sets both limits of a process (lowering needs no privilege); beyond the kernel's ceiling it fails with the reason", async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      expect(await setOpenFilesLimit(4096, child.pid)).toBeUndefined();
      expect(parseOpenFilesLimit(readFileSync(`/proc/${child.pid}/limits`, 'utf8'))).toEqual({
        soft: 4096,
        hard: 4096,
      });
      // Already so: nothing to do.
      expect(await setOpenFilesLimit(4096, child.pid)).toBeUndefined();
      const nrOpen = Number(readFileSync('/proc/sys/fs/nr_open', 'utf8'));
      expect(await setOpenFilesLimit(nrOpen + 1, child.pid)).toMatch(/NOFILE/);
      expect(parseOpenFilesLimit(readFileSync(`/proc/${child.pid}/limits`, 'utf8'))).toEqual({
        soft: 4096,
        hard: 4096,
      });
    } finally {
      child.kill('SIGKILL');
    }
  });
});
