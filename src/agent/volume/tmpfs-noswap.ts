/**
 * The tmpfs `noswap` option (Linux 6.4): a memory-backed volume mounted with it is never written to swap. Upstream
 * mounts every memory-backed volume (an emptyDir of medium Memory, and secret and projected volumes) with it wherever
 * the kernel has it, so that a secret cannot end up on a swap device; on an older kernel it tries a mount with the
 * option once, and on a node with swap on and no `noswap` it warns with a PossibleMemoryBackedVolumesOnDisk event
 * (upstream pkg/kubelet/util/swap).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const TMPFS_NOSWAP_OPTION = 'noswap';

/** Upstream's event message where swap is on and the kernel has no `noswap`. */
export const POSSIBLE_MEMORY_BACKED_VOLUMES_ON_DISK =
  'The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) ' +
  'might be swapped to disk and should no longer be considered secure.';

/** Whether the kernel `release` (uname -r, e.g. "6.1.0-13-amd64") is at least 6.4, which has `noswap`. Pure. */
export function kernelHasTmpfsNoswap(kernelRelease: string): boolean {
  const match = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 6 || (major === 6 && minor >= 4);
}

let supported: Promise<boolean> | undefined;

/**
 * Whether tmpfs takes `noswap` here: by the kernel's version, else (a backport) by mounting a tmpfs with it in a
 * directory made under `probeParent`; asked once per process, as upstream does.
 */
export function tmpfsNoswapSupported(probeParent: string): Promise<boolean> {
  supported ??= (async () => {
    if (kernelHasTmpfsNoswap(release())) return true;
    let dir: string | undefined;
    try {
      dir = await mkdtemp(join(probeParent, 'tmpfs-noswap-test-'));
      await run('mount', ['-t', 'tmpfs', '-o', TMPFS_NOSWAP_OPTION, 'tmpfs', dir]);
      await run('umount', [dir]).catch(() => {});
      return true;
    } catch {
      return false;
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  })();
  return supported;
}

/**
 * The Node's warning where memory-backed volumes may be swapped out (upstream NewContainerManager): swap on and no
 * `noswap`; undefined otherwise. Pure.
 */
export function memoryBackedVolumesWarning(swapOn: boolean, noswapSupported: boolean): string | undefined {
  return swapOn && !noswapSupported ? POSSIBLE_MEMORY_BACKED_VOLUMES_ON_DISK : undefined;
}
