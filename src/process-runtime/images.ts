/**
 * The process runtime's ImageService. Processes run from the host filesystem, so images are not
 * pulled: every image reference is "present", with a stable id derived from its name. Pulls are
 * recorded so ListImages shows what pods asked for.
 */
import { createHash } from 'node:crypto';
import { statfs } from 'node:fs/promises';
import type { ImageService } from '../cri/services.js';
import type * as cri from '../cri/types.js';

/** The id the runtime reports for an image name. */
export function imageIdOf(name: string): string {
  return `sha256:${createHash('sha256').update(name).digest('hex')}`;
}

/** ImageService of the process runtime. */
export class ProcessImages implements ImageService {
  private readonly seen = new Map<string, cri.Image>();
  constructor(private readonly rootDir: string) {}

  private describe(name: string): cri.Image {
    return {
      id: imageIdOf(name),
      repo_tags: [name],
      repo_digests: [],
      size: 1,
      username: '',
      pinned: false,
      spec: { image: name },
    };
  }

  async listImages(filter?: cri.ImageSpec): Promise<cri.Image[]> {
    const all = [...this.seen.values()];
    return filter?.image ? all.filter((i) => i.repo_tags.includes(filter.image) || i.id === filter.image) : all;
  }
  async imageStatus(image: cri.ImageSpec): Promise<cri.Image | null> {
    return image.image ? (this.seen.get(image.image) ?? this.describe(image.image)) : null;
  }
  async pullImage(image: cri.ImageSpec): Promise<string> {
    const img = this.describe(image.image);
    this.seen.set(image.image, img);
    return img.id;
  }
  async removeImage(image: cri.ImageSpec): Promise<void> {
    this.seen.delete(image.image);
  }
  /** One filesystem, as containerd reports: the processes write where their images are. */
  async imageFsInfo(): Promise<cri.ImageFsInfo> {
    const s = await statfs(this.rootDir).catch(() => undefined);
    const ts = Date.now() * 1e6;
    return {
      image_filesystems: [
        {
          timestamp: ts,
          fs_id: { mountpoint: this.rootDir },
          used_bytes: { value: s ? (s.blocks - s.bfree) * s.bsize : 0 },
          inodes_used: { value: s ? s.files - s.ffree : 0 },
        },
      ],
    };
  }
}
