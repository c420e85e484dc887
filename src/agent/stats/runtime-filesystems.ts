/**
 * The runtime's filesystems from its ImageFsInfo answer, as upstream's CRI stats provider and cAdvisor make them: the
 * image filesystem (the one that holds `image_filesystems[0]`'s mountpoint, with the runtime's figure for what its
 * images use), the containers' filesystem (`container_filesystems[0]` from a runtime that keeps writable layers apart,
 * with the KubeletSeparateDiskGC gate on; else the image filesystem, as upstream's ImageFsStats returns it), and the
 * node's disk layout the eviction manager acts on: which of these are on a device of their own (upstream
 * HasDedicatedImageFs and HasDedicatedContainerFs compare devices).
 */
import { stat } from 'node:fs/promises';
import type * as cri from '../../cri/types.js';
import { fsUsage } from './node-sources.js';

/** A filesystem's figures, with what the runtime says its images or writable layers use of it. */
export type RuntimeFilesystem = NonNullable<Awaited<ReturnType<typeof fsUsage>>> & {
  imageUsedBytes?: number;
  imageInodesUsed?: number;
};

/** Which of the node's filesystems are apart (see eviction/disk-layout.ts for what follows). */
export interface DiskLayout {
  /** The image filesystem is on another device than the kubelet's root dir. */
  dedicatedImageFs: boolean;
  /** The containers' filesystem is on another device than the images'. */
  splitContainerFs: boolean;
}

export interface RuntimeFilesystems {
  imageFs?: RuntimeFilesystem;
  containerFs?: RuntimeFilesystem;
  /** Absent until the runtime has said where its images are. */
  diskLayout?: DiskLayout;
}

async function deviceOf(path: string): Promise<number | undefined> {
  return (await stat(path).catch(() => undefined))?.dev;
}

async function filesystemOf(usage: cri.FilesystemUsage | undefined): Promise<RuntimeFilesystem | undefined> {
  const mountpoint = usage?.fs_id?.mountpoint;
  const figures = mountpoint ? await fsUsage(mountpoint) : undefined;
  return (
    figures && {
      ...figures,
      imageUsedBytes: usage?.used_bytes?.value,
      imageInodesUsed: usage?.inodes_used?.value,
    }
  );
}

/** The filesystems of `info` (ImageFsInfo's answer), `rootDir` being the kubelet's. */
export async function runtimeFilesystems(
  info: cri.ImageFsInfo,
  o: { rootDir: string; separateDiskGc: boolean },
): Promise<RuntimeFilesystems> {
  const images = info.image_filesystems[0];
  const containers = info.container_filesystems?.[0];
  const imageFs = await filesystemOf(images);
  const separate = o.separateDiskGc && containers?.fs_id?.mountpoint ? await filesystemOf(containers) : undefined;
  const imageMount = images?.fs_id?.mountpoint;
  if (!imageFs || !imageMount) return { imageFs, containerFs: imageFs };
  const [rootDevice, imageDevice, containerDevice] = await Promise.all([
    deviceOf(o.rootDir),
    deviceOf(imageMount),
    containers?.fs_id?.mountpoint ? deviceOf(containers.fs_id.mountpoint) : undefined,
  ]);
  return {
    imageFs,
    containerFs: separate ?? imageFs,
    diskLayout: {
      dedicatedImageFs: rootDevice !== undefined && imageDevice !== undefined && rootDevice !== imageDevice,
      splitContainerFs: containerDevice !== undefined && imageDevice !== undefined && containerDevice !== imageDevice,
    },
  };
}
