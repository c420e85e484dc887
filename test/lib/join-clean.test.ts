/** joinClean is path.join, cheaper for the plain paths the stats read at every sample. */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { joinClean } from '../../src/lib/join-clean.js';

describe('joinClean', () => {
  it('gives join’s result for plain and unusual paths alike', () => {
    const roots = ['/sys/fs/cgroup', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/', '/', '', 'rel'];
    const paths = [
      '/kubepods/besteffort/pod1234',
      '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice',
      '/kubepods/../../etc',
      '/kubepods/./x',
      '/kubepods//x',
      '/kubepods/x/',
      'kubepods/x',
      '/',
      '',
      '/..',
      '/.hidden/..x/x..',
    ];
    for (const r of roots) for (const p of paths) expect(joinClean(r, p), `${r} + ${p}`).toBe(join(r, p));
  });
});
