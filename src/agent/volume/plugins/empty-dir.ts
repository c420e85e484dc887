/**
 * emptyDir (upstream pkg/volume/emptydir): a directory under the pod, mode 0777, on the node's
 * disk; `medium: Memory` is a tmpfs mounted there (root only), sized by `sizeLimit` when set.
 * fsGroup ownership as upstream (read-write masks).
 */
import { chmod, mkdir } from 'node:fs/promises';
import { bytes } from '../../../api/quantity.js';
import { mountTmpfs } from '../mount-util.js';
import { setVolumeOwnership } from '../ownership.js';
import type { MountedVolume, SetUpContext, VolumePlugin } from '../types.js';

/** The emptyDir plugin. */
export const emptyDirPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~empty-dir',
  field: 'emptyDir',
  remountEachSync: false,
  async setUp({ volume, dir, fsGroup, host }: SetUpContext): Promise<MountedVolume> {
    const src = (volume.emptyDir ?? {}) as { medium?: string; sizeLimit?: string };
    const medium = src.medium ?? '';
    if (medium !== '' && medium !== 'Memory') throw new Error(`unknown storage medium "${medium}" (tskubelet supports "" and "Memory")`);
    await mkdir(dir, { recursive: true });
    if (medium === 'Memory') {
      if (!host.isRoot) throw new Error('emptyDir medium "Memory" needs a tmpfs mount, which needs root');
      await mountTmpfs(dir, src.sizeLimit ? (bytes(src.sizeLimit) ?? 0) : 0);
    }
    await chmod(dir, 0o777);
    await setVolumeOwnership(dir, fsGroup, false);
    return { path: dir, readOnly: false, plugin: this.dirName, seLinuxRelabel: true, metrics: 'du', localEphemeral: medium === '' };
  },
};
