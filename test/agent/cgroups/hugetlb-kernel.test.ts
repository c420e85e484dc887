/**
 * The pod and QoS cgroups' huge page limits as the kernel takes them: the hugetlb controller mounted (v1) under the
 * test's own directory, the manager's writes read back from the kernel's files, the unbounded value of the QoS tiers
 * (1 << 62) included, and the embedded runtime's container limits. The cpu, cpuacct and memory hierarchies are plain
 * directories here (their writes have tests of their own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { PodCgroupManager } from '../../../src/agent/cgroups/pod-cgroup-manager.js';
import { hugePageSizesKbSync } from '../../../src/agent/nodestatus/machine-info.js';
import { hugePageUnitSize } from '../../../src/agent/runtime/linux-resources.js';
import {
  applyCgroupLimits,
  createContainerCgroup,
  createSandboxCgroup,
  detectContainerCgroups,
} from '../../../src/process-runtime/container-cgroups.js';

/** Whether this machine can mount a hugetlb hierarchy of its own: root, the controller in the kernel, page sizes. */
const canMountHugetlb = () =>
  process.getuid?.() === 0 &&
  /^hugetlb\s/m.test(readFileSync('/proc/cgroups', 'utf8')) &&
  hugePageSizesKbSync().includes(2048);

/** Removes a cgroup tree, children first. */
function removeTree(path: string): void {
  if (!existsSync(path)) return;
  for (const entry of readdirSync(path, { withFileTypes: true }))
    if (entry.isDirectory()) removeTree(join(path, entry.name));
  rmdirSync(path);
}

describe.runIf(canMountHugetlb())('hugetlb limits on the kernel', () => {
  const dir = mkdtempSync('/var/tmp/tsk-hugetlb-');
  const mount = join(dir, 'hugetlb-mount');
  const fsRoot = join(dir, 'cgroupfs');
  const own = join(mount, `tsk-hugetlb-${process.pid}`);

  beforeAll(() => {
    mkdirSync(mount, { recursive: true });
    execFileSync('mount', ['-t', 'cgroup', '-o', 'hugetlb', 'tsk-hugetlb', mount]);
    mkdirSync(own);
    for (const c of ['cpu', 'cpuacct', 'memory']) {
      mkdirSync(join(fsRoot, c), { recursive: true });
      writeFileSync(join(fsRoot, c, 'cgroup.procs'), '');
    }
    symlinkSync(own, join(fsRoot, 'hugetlb'));
  });

  afterAll(() => {
    removeTree(own);
    execFileSync('umount', [mount]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a pod gets what it requests of each page size and 0 of the others; the tiers unbounded; kubepods the allocatable', async () => {
    const sizes = hugePageSizesKbSync();
    const m = new PodCgroupManager({
      cgroups: { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' },
      cpuCFSQuota: true,
      cpuCFSQuotaPeriodUs: 100_000,
      podPidsLimit: -1,
      fsRoot,
      hugePageSizesKb: sizes,
    });
    await m.ensureQosCgroups({ cpuMilli: 1000, memoryBytes: 2 ** 30, hugePageBytes: { 'hugepages-2Mi': 8 * 2 ** 20 } });
    const limit = (cgroup: string, size: string) =>
      readFileSync(join(own, cgroup, `hugetlb.${size}.limit_in_bytes`), 'utf8').trim();
    expect(limit('kubepods', '2MB')).toBe(String(8 * 2 ** 20));
    // 1 << 62, as upstream writes it.
    expect(limit('kubepods/burstable', '2MB')).toBe('4611686018427387904');
    expect(limit('kubepods/besteffort', '2MB')).toBe('4611686018427387904');
    const huge = { cpu: '100m', memory: '16Mi', 'hugepages-2Mi': '4Mi' };
    const pod: Pod = {
      metadata: { name: 'p', namespace: 'd', uid: 'huge-1' },
      spec: { containers: [{ name: 'c', image: 'i', resources: { requests: huge, limits: huge } }] },
    };
    await m.ensure(pod);
    expect(limit('kubepods/podhuge-1', '2MB')).toBe(String(4 * 2 ** 20));
    for (const kb of sizes.filter((kb) => kb !== 2048))
      expect(limit('kubepods/podhuge-1', hugePageUnitSize(kb))).toBe('0');
  });

  it("the embedded runtime writes a container's huge page limits from CRI into its cgroup", async () => {
    const cg = (await detectContainerCgroups('hugetlb-test', fsRoot))!;
    expect(cg.hugetlbRoot).toBe(join(own, 'tskubelet-process-runtime', 'hugetlb-test'));
    await createSandboxCgroup(cg, 'sandbox', undefined);
    const path = join('sandbox', 'container');
    await createContainerCgroup(cg, path);
    await applyCgroupLimits(cg, path, {
      hugepage_limits: hugePageSizesKbSync().map((kb) => ({
        page_size: hugePageUnitSize(kb),
        limit: kb === 2048 ? 2 * 2 ** 20 : 0,
      })),
    });
    expect(readFileSync(join(cg.hugetlbRoot!, path, 'hugetlb.2MB.limit_in_bytes'), 'utf8').trim()).toBe(
      String(2 * 2 ** 20),
    );
  });
});
