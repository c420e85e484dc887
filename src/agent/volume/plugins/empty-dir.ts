/**
 * emptyDir (upstream pkg/volume/emptydir): a directory under the pod, mode 0777, on the node's
 * disk; `medium: Memory` is a tmpfs mounted there (root only; `noswap` where the kernel has it), sized as upstream's
 * SizeMemoryBackedVolumes: the least of the node's allocatable memory, the pod's memory limit and
 * the volume's `sizeLimit`;
 * `medium: HugePages` (or `HugePages-<size>`) a hugetlbfs of the page size the pod's containers
 * request. fsGroup ownership as upstream (read-write masks).
 */
import { chmod, mkdir, stat } from 'node:fs/promises';
import { bytes, isHugePageResource } from '../../../api/quantity.js';
import { dirname } from 'node:path';
import { mountHugetlbfs, mountTmpfs } from '../mount-util.js';
import { tmpfsNoswapSupported } from '../tmpfs-noswap.js';
import { markReady } from './ready-marker.js';
import type { Pod } from '../../../api/types.js';
import { setVolumeOwnership } from '../ownership.js';
import { podLimits } from '../../cgroups/pod-resource-config.js';
import type { MountedVolume, SetUpContext, VolumePlugin } from '../types.js';

/**
 * Upstream's setupDir: the volume's directory made, with the permission bits 0777 whatever the umask. Only the bits
 * are compared, so a filesystem mounted there keeps its root's own mode (a tmpfs's 1777, sticky) on every later set-up.
 */
export async function setupDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (((await stat(dir)).mode & 0o777) !== 0o777) await chmod(dir, 0o777);
}

/** The emptyDir plugin. */
export const emptyDirPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~empty-dir',
  field: 'emptyDir',
  remountEachSync: false,
  async setUp({ pod, volume, dir, volumesDir, fsGroup, host }: SetUpContext): Promise<MountedVolume> {
    const src = (volume.emptyDir ?? {}) as { medium?: string; sizeLimit?: string };
    const medium = src.medium ?? '';
    const huge = medium.startsWith('HugePages');
    if (medium !== '' && medium !== 'Memory' && !huge)
      throw new Error(`unknown storage medium "${medium}" (tskubelet supports "", "Memory" and "HugePages")`);
    const pageSize = huge ? pageSizeMountOption(medium, pod) : undefined;
    await setupDir(dir);
    if (medium === 'Memory' || pageSize) {
      if (!host.isRoot) throw new Error(`emptyDir medium "${medium}" needs a mount, which needs root`);
      if (pageSize) await mountHugetlbfs(dir, pageSize);
      else
        await mountTmpfs(dir, {
          sizeBytes: memoryBackedSize(pod, bytes(src.sizeLimit ?? '') ?? 0, host.nodeAllocatableMemoryBytes?.() ?? 0),
          noswap: await tmpfsNoswapSupported(dirname(dir)),
        });
    }
    await setVolumeOwnership(dir, fsGroup, {
      readOnly: false,
      kubeletMade: true,
      progress: { pod, events: host.events, logger: host.logger },
    });
    await markReady(volumesDir, volume.name);
    return {
      path: dir,
      readOnly: false,
      plugin: this.dirName,
      seLinuxRelabel: true,
      metrics: 'du',
      localEphemeral: medium === '',
    };
  },
};

/**
 * The size of a memory-backed emptyDir in bytes (upstream calculateEmptyDirMemorySize), 0 for
 * none: the node's allocatable memory, lowered to the pod's memory limit (when every container has
 * one) and then to the volume's sizeLimit, each only when it is positive and not larger. Pure.
 */
export function memoryBackedSize(pod: Pod, sizeLimitBytes: number, nodeAllocatableBytes: number): number {
  let size = nodeAllocatableBytes;
  const fits = (value: number) => value > 0 && (size === 0 || value <= size);
  const limits = podLimits(pod);
  if (limits.memoryDeclared && fits(limits.memoryBytes)) size = limits.memoryBytes;
  if (fits(sizeLimitBytes)) size = sizeLimitBytes;
  return size;
}

/**
 * The hugetlbfs page size option for `medium` (upstream getPageSizeMountOption; pure): `HugePages-<size>`
 * names it and some container must request it; `HugePages` takes the one size the containers
 * request. Throws upstream's errors otherwise.
 */
export function pageSizeMountOption(medium: string, pod: Pod): string {
  const mediumSize = medium === 'HugePages' ? undefined : medium.replace(/^HugePages-/, '');
  if (mediumSize !== undefined && (!medium.startsWith('HugePages-') || !bytes(mediumSize)))
    throw new Error(`size not specified in medium ${medium}`);
  let found: string | undefined;
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
    for (const name of Object.keys(c.resources?.requests ?? {})) {
      if (!isHugePageResource(name)) continue;
      const size = name.slice('hugepages-'.length);
      if (mediumSize === undefined) {
        if (found !== undefined && bytes(found) !== bytes(size))
          throw new Error(`medium: ${medium} can't be used if container requests multiple huge page sizes`);
        found = size;
      } else if (bytes(size) === bytes(mediumSize)) found = size;
    }
  }
  if (found === undefined)
    throw new Error(`medium ${medium}: hugePages storage requested, but there is no resource request for huge pages`);
  return `pagesize=${found}`;
}
