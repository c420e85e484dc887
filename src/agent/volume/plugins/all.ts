/** The volume plugins tskubelet has, in the order the volume manager asks them. */
import type { VolumePlugin } from '../types.js';
import type { CsiVolumes } from './csi.js';
import { emptyDirPlugin } from './empty-dir.js';
import { hostPathPlugin } from './host-path.js';
import { claimPlugins } from './persistent-volume.js';
import { configMapPlugin, downwardApiPlugin, projectedPlugin, secretPlugin } from './projection.js';

/** Every plugin tskubelet has; CSI volumes (inline, and PVs through claims) with `csi`. */
export function volumePlugins(csi?: CsiVolumes): VolumePlugin[] {
  return [
    emptyDirPlugin,
    hostPathPlugin,
    configMapPlugin,
    secretPlugin,
    downwardApiPlugin,
    projectedPlugin,
    ...claimPlugins(csi),
    ...(csi ? [csi.plugin] : []),
  ];
}

/** The plugins without CSI (no driver registry). */
export const IN_TREE_PLUGINS: readonly VolumePlugin[] = volumePlugins();
