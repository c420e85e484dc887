/**
 * Huge page limits as the kernel takes them: the pod and QoS cgroups' (the kubelet's) and an embedded-runtime
 * container's, written through the kubelet's code into a hugetlb hierarchy of the kernel and read back, the QoS
 * tiers' unbounded value (1 << 62) included. The hierarchy is mounted in a mount namespace of its own
 * (test/fixtures/hugetlb-writes.ts runs there), so no other process sees it; only on cgroup v1 hosts, where mounting
 * it takes nothing from a v2 hierarchy.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { hugePageSizesKbSync } from '../../../src/agent/nodestatus/machine-info.js';
import { hugePageUnitSize } from '../../../src/agent/runtime/linux-resources.js';

const script = join(import.meta.dirname, '..', '..', 'fixtures', 'hugetlb-writes.ts');

/** Root, a cgroup v1 host, the hugetlb controller in the kernel, and 2 MiB pages. */
const canMountHugetlb = () =>
  process.getuid?.() === 0 &&
  existsSync('/sys/fs/cgroup/memory/cgroup.procs') &&
  /^hugetlb\s/m.test(readFileSync('/proc/cgroups', 'utf8')) &&
  hugePageSizesKbSync().includes(2048);

describe.runIf(canMountHugetlb())('huge page limits on the kernel', () => {
  it('a pod gets what it requests of each size and 0 of the others, the tiers 1 << 62, kubepods the allocatable, a container its CRI limits', () => {
    const dir = mkdtempSync('/var/tmp/tsk-hugetlb-');
    try {
      const mount = join(dir, 'hugetlb');
      const out = execFileSync(
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          '--',
          'sh',
          '-c',
          'mkdir "$1" && mount -t cgroup -o hugetlb tsk-hugetlb "$1" && exec "$2" --import tsx "$3" "$1" "$4"',
          'sh',
          mount,
          process.execPath,
          script,
          dir,
        ],
        { encoding: 'utf8', timeout: 30_000 },
      );
      const limits = JSON.parse(out) as Record<string, Record<string, string>>;
      const others = hugePageSizesKbSync()
        .filter((kb) => kb !== 2048)
        .map(hugePageUnitSize);
      const withOthers = (twoMb: string, other: string) => ({
        '2MB': twoMb,
        ...Object.fromEntries(others.map((size) => [size, other])),
      });
      expect(limits).toEqual({
        kubepods: withOthers(String(8 * 2 ** 20), '0'),
        burstable: withOthers('4611686018427387904', '4611686018427387904'),
        besteffort: withOthers('4611686018427387904', '4611686018427387904'),
        pod: withOthers(String(4 * 2 ** 20), '0'),
        container: withOthers(String(2 * 2 ** 20), '0'),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
