/**
 * emptyDir with `medium: HugePages`: the page size from the pod's requests as upstream, and a real hugetlbfs mount (as
 * root).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { emptyDirPlugin, pageSizeMountOption } from '../../../src/agent/volume/plugins/empty-dir.js';
import type { VolumeHost } from '../../../src/agent/volume/types.js';

const pod = (...requests: Record<string, string>[]): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: { containers: requests.map((r, i) => ({ name: `c${i}`, image: 'i', resources: { requests: r, limits: r } })) },
});
const base = mkdtempSync(join(tmpdir(), 'tsk-hugepages-'));
afterAll(() => {
  try {
    execFileSync('umount', [join(base, 'vol')], { stdio: 'ignore' });
  } catch {
    /* not mounted */
  }
  rmSync(base, { recursive: true, force: true });
});

describe('emptyDir medium HugePages (upstream getPageSizeMountOption)', () => {
  it('takes the page size the containers request, or the one the medium names', () => {
    expect(pageSizeMountOption('HugePages', pod({ 'hugepages-2Mi': '4Mi', memory: '8Mi' }, { cpu: '1' }))).toBe(
      'pagesize=2Mi',
    );
    expect(pageSizeMountOption('HugePages-1Gi', pod({ 'hugepages-2Mi': '4Mi' }, { 'hugepages-1Gi': '1Gi' }))).toBe(
      'pagesize=1Gi',
    );
  });

  it('refuses what upstream refuses, in its words', () => {
    expect(() => pageSizeMountOption('HugePages', pod({ 'hugepages-2Mi': '4Mi' }, { 'hugepages-1Gi': '1Gi' }))).toThrow(
      "medium: HugePages can't be used if container requests multiple huge page sizes",
    );
    expect(() => pageSizeMountOption('HugePages', pod({ memory: '1Gi' }))).toThrow(
      'medium HugePages: hugePages storage requested, but there is no resource request for huge pages',
    );
    expect(() => pageSizeMountOption('HugePages-1Gi', pod({ 'hugepages-2Mi': '4Mi' }))).toThrow(
      'medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages',
    );
    expect(() => pageSizeMountOption('HugePages-x', pod({ 'hugepages-2Mi': '4Mi' }))).toThrow(
      'size not specified in medium HugePages-x',
    );
  });

  it.skipIf(process.getuid?.() !== 0)('mounts a hugetlbfs of that page size (root)', async () => {
    const dir = join(base, 'vol');
    const host = { isRoot: true } as VolumeHost;
    const p = pod({ 'hugepages-2Mi': '4Mi' });
    const volume = { name: 'huge', emptyDir: { medium: 'HugePages' } };
    const m = await emptyDirPlugin.setUp({ pod: p, volume, dir, volumesDir: base, host });
    expect(m).toMatchObject({ path: dir, localEphemeral: false });
    const line = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .find((l) => l.split(' ')[1] === dir);
    expect(line).toMatch(/^nodev \S+ hugetlbfs \S*pagesize=2M/);
    // Set up again (each sync): nothing mounted twice.
    await emptyDirPlugin.setUp({ pod: p, volume, dir, volumesDir: base, host });
    expect(
      readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .filter((l) => l.split(' ')[1] === dir),
    ).toHaveLength(1);
  });
});
