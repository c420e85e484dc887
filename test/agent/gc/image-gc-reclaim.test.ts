/**
 * The image GC's reclaim under disk pressure (upstream DeleteUnusedImages): every unused image old enough goes,
 * whatever the disk usage the periodic collection goes by; images in use, pinned, protected (the sandbox image) or
 * younger than imageMinimumGCAge stay, and the pull records of the removed ones are pruned after.
 */
import { describe, expect, it } from 'vitest';
import { ImageGc } from '../../../src/agent/gc/image-gc.js';
import type { ImageService, RuntimeService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';

describe('deleting unused images under disk pressure', () => {
  it('removes every unused, unpinned, unprotected image old enough, whatever the disk usage', async () => {
    const clock = new FakeClock();
    const image = (id: string, pinned = false) =>
      ({ id, repo_tags: [`${id}:1`], repo_digests: [], size: 10, pinned }) as unknown as cri.Image;
    const images = new Map(
      ['used', 'old-a', 'old-b', 'pinned', 'sandbox'].map((id) => [id, image(id, id === 'pinned')]),
    );
    const removed: string[] = [];
    const remaining: string[][] = [];
    const gc = new ImageGc({
      runtime: {
        listContainers: async () => [{ id: 'c1', image_ref: 'used', image: { image: 'used:1' } }],
      } as unknown as RuntimeService,
      images: {
        listImages: async () => [...images.values()],
        removeImage: async (spec: cri.ImageSpec) => {
          removed.push(spec.image);
          images.delete(spec.image);
        },
        // The image filesystem is nearly empty: the periodic collection would free nothing.
        imageFsInfo: async () => ({ image_filesystems: [] }),
      } as unknown as ImageService,
      clock,
      logger: createLogger({ level: 'fatal' }),
      policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 },
      protectedImages: async () => ['sandbox:1'],
      afterPass: async (left) => {
        remaining.push([...left].sort());
      },
    });
    expect(await gc.garbageCollect()).toEqual([]);
    // Detected just now: younger than imageMinimumGCAge.
    expect(await gc.deleteUnusedImages()).toEqual([]);
    images.set('fresh', image('fresh'));
    clock.advance(121_000);
    expect((await gc.deleteUnusedImages()).sort()).toEqual(['old-a', 'old-b']);
    expect(removed.sort()).toEqual(['old-a', 'old-b']);
    expect(remaining.at(-1)).toEqual(['fresh', 'pinned', 'sandbox', 'used']);
  });
});
