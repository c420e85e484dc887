/**
 * What the node's filesystems mean for eviction (upstream eviction helpers.go with KubeletSeparateDiskGC), pure. Three
 * layouts, told apart by device (stats/runtime-filesystems.ts):
 * - one filesystem: the kubelet's root dir, the images and the containers' writable layers share a device;
 * - a dedicated image filesystem: the runtime keeps images and writable layers on a device of their own
 *   (containerd with /var/lib/containerd on another disk);
 * - a split image filesystem: the runtime reports a containers' filesystem apart from the images' (CRI-O), the
 *   writable layers then being on the node's filesystem.
 * For each, the containerfs thresholds follow those of the filesystem the writable layers are on, a pod's disk use
 * counts what lives on the filesystem under pressure, and the node-level reclaim frees what is there.
 */
import type { DiskLayout } from '../stats/runtime-filesystems.js';
import type { Signal, Threshold } from './signals.js';

export type { DiskLayout };

/** One filesystem for everything: what is assumed until the runtime has said where its images are. */
export const SINGLE_FILESYSTEM: DiskLayout = { dedicatedImageFs: false, splitContainerFs: false };

/** What of a pod's disk use is counted against a filesystem (upstream fsStatsType, less the images: not per pod). */
export type PodDiskUse = 'rootfs' | 'logs' | 'localVolumes';

/** Node-level reclaim before a pod is evicted (upstream nodeReclaimFuncs): dead containers, unused images. */
export type NodeReclaim = 'containers' | 'images';

const ALL_POD_DISK_USE: readonly PodDiskUse[] = ['rootfs', 'logs', 'localVolumes'];

type DiskSignal = 'nodefs' | 'imagefs' | 'containerfs';

function filesystemOf(signal: Signal): DiskSignal | undefined {
  const prefix = signal.split('.')[0];
  return prefix === 'nodefs' || prefix === 'imagefs' || prefix === 'containerfs' ? prefix : undefined;
}

/**
 * The thresholds with the containerfs ones made from the filesystem the writable layers are on (upstream
 * UpdateContainerFsThresholds): nodefs' with one filesystem or a split one, imagefs' with a dedicated image
 * filesystem. A containerfs threshold given in the configuration is replaced, and named in `ignored`.
 */
export function withContainerFsThresholds(
  thresholds: readonly Threshold[],
  layout: DiskLayout,
): { thresholds: Threshold[]; ignored: string[] } {
  const given = thresholds.filter((t) => filesystemOf(t.signal) === 'containerfs');
  const ignored = given.map((t) => `found ${t.signal} for ${t.graceMs === undefined ? 'hard' : 'soft'} eviction`);
  // Upstream leaves the thresholds as they are when only the containers' filesystem is apart.
  if (!layout.dedicatedImageFs && layout.splitContainerFs) return { thresholds: [...thresholds], ignored: [] };
  const source: DiskSignal = layout.dedicatedImageFs && !layout.splitContainerFs ? 'imagefs' : 'nodefs';
  const derived = thresholds
    .filter((t) => filesystemOf(t.signal) === source)
    .map((t): Threshold => ({
      ...t,
      signal: t.signal.endsWith('.available') ? 'containerfs.available' : 'containerfs.inodesFree',
    }));
  return { thresholds: [...thresholds.filter((t) => !given.includes(t)), ...derived], ignored };
}

/** What of each pod's disk use ranks the pods under a disk signal's pressure (upstream buildSignalToRankFunc). */
export function podDiskUseCounted(signal: Signal, layout: DiskLayout): readonly PodDiskUse[] {
  const filesystem = filesystemOf(signal);
  if (!filesystem || !layout.dedicatedImageFs) return ALL_POD_DISK_USE;
  if (!layout.splitContainerFs) return filesystem === 'nodefs' ? ['logs', 'localVolumes'] : ['rootfs'];
  // Split: the writable layers are on the node's filesystem; the image filesystem holds images only.
  return filesystem === 'imagefs' ? [] : ALL_POD_DISK_USE;
}

/** What is freed on the node before a pod is evicted for a disk signal (upstream buildSignalToNodeReclaimFuncs). */
export function nodeReclaimFor(signal: Signal, layout: DiskLayout): readonly NodeReclaim[] {
  const filesystem = filesystemOf(signal);
  if (!filesystem) return [];
  if (!layout.dedicatedImageFs) return ['containers', 'images'];
  if (!layout.splitContainerFs) return filesystem === 'nodefs' ? [] : ['containers', 'images'];
  return filesystem === 'imagefs' ? ['images'] : ['containers'];
}
