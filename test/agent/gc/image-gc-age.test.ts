/**
 * imageMaximumGCAge: images unused for longer than the maximum age are removed whatever the disk
 * usage, once the kubelet has run that long. After each pass the images left are handed on (the
 * pull records of the others are pruned). An image volume's image counts as in use while its pod runs.
 */
import { describe, expect, it } from 'vitest';
import { ImageGc } from '../../../src/agent/gc/image-gc.js';
import type { ImageService, RuntimeService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';

describe('image GC by maximum age', () => {
  it('removes unused images after the maximum age, counted from their last use and from the kubelet start', async () => {
    const clock = new FakeClock();
    const images = new Map<string, cri.Image>(
      ['used', 'idle', 'pinned', 'sandbox', 'volume'].map((id) => [
        id,
        { id, repo_tags: [`${id}:1`], repo_digests: [], size: 10, pinned: id === 'pinned' } as unknown as cri.Image,
      ]),
    );
    let containers: cri.Container[] = [
      { id: 'c1', image_ref: 'used', image: { image: 'used:1' } } as unknown as cri.Container,
    ];
    // An image volume's image is in use while its pod is (no container runs it).
    let volumeImages = ['volume:1'];
    const removed: string[] = [];
    const reasons: string[] = [];
    const gc = new ImageGc({
      runtime: { listContainers: async () => containers } as unknown as RuntimeService,
      images: {
        listImages: async () => [...images.values()],
        removeImage: async (spec: cri.ImageSpec) => {
          removed.push(spec.image);
          images.delete(spec.image);
        },
        imageFsInfo: async () => ({ image_filesystems: [] }),
      } as unknown as ImageService,
      clock,
      logger: createLogger({ level: 'fatal' }),
      policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 600_000 },
      protectedImages: async () => ['sandbox:1'],
      imageVolumeImages: () => volumeImages,
      onRemoved: (reason) => reasons.push(reason),
      afterPass: async (remaining, listedAtMs) => {
        passes.push({ remaining: [...remaining].sort(), listedAtMs });
      },
    });
    const passes: { remaining: string[]; listedAtMs: number }[] = [];
    expect(await gc.garbageCollect()).toEqual([]);
    clock.advance(599_000);
    expect(await gc.garbageCollect()).toEqual([]); // the kubelet has not run the maximum age yet
    clock.advance(2_000);
    const before = clock.now();
    expect(await gc.garbageCollect()).toEqual(['idle']);
    expect(passes.at(-1)).toEqual({ remaining: ['pinned', 'sandbox', 'used', 'volume'], listedAtMs: before });
    // The container and the pod go; their images are removed the maximum age after their last use.
    containers = [];
    volumeImages = [];
    clock.advance(300_000);
    expect(await gc.garbageCollect()).toEqual([]);
    clock.advance(300_001);
    expect(await gc.garbageCollect()).toEqual(['used', 'volume']);
    expect(removed).toEqual(['idle', 'used', 'volume']);
    expect(passes).toHaveLength(5);
    expect(passes.at(-1)!.remaining).toEqual(['pinned', 'sandbox']);
    // kubelet_image_garbage_collected_total{reason}: both by age.
    expect(reasons).toEqual(['age', 'age', 'age']);
  });
});
