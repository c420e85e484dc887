/**
 * Pull concurrency (serializeImagePulls / maxParallelImagePulls) and the registry pull rate (registryPullQPS /
 * registryBurst).
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import type { ImageService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { ImageManager } from '../../../src/agent/images/image-manager.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { TokenBucket } from '../../../src/lib/token-bucket.js';

/** A registry whose pulls take `ms` and count how many run at once. */
function slowRegistry(ms: number) {
  const present = new Set<string>();
  const stats = { running: 0, peak: 0, pulls: 0 };
  const svc = {
    listImages: async () => [],
    imageStatus: async (spec: cri.ImageSpec) =>
      present.has(spec.image) ? ({ id: spec.image, size: 1 } as unknown as cri.Image) : null,
    async pullImage(spec: cri.ImageSpec) {
      stats.pulls++;
      stats.running++;
      stats.peak = Math.max(stats.peak, stats.running);
      await new Promise((r) => setTimeout(r, ms));
      stats.running--;
      present.add(spec.image);
      return spec.image;
    },
    removeImage: async () => {},
    imageFsInfo: async () => ({ image_filesystems: [] }),
  } satisfies ImageService;
  return { svc, stats };
}

const podWith = (image: string, uid = image): Pod => ({
  metadata: { name: 'p', namespace: 'd', uid },
  spec: { containers: [{ name: 'c', image }] },
});
const pullAll = (m: ImageManager, n: number) =>
  Promise.all(
    Array.from({ length: n }, (_, i) => {
      const p = podWith(`img${i}:1`);
      return m.ensureImageExists(p, p.spec.containers[0]);
    }),
  );

describe('image pull limits', () => {
  it('serializeImagePulls runs one pull at a time', async () => {
    const { svc, stats } = slowRegistry(20);
    await pullAll(new ImageManager({ images: svc, clock: new FakeClock(), serializeImagePulls: true }), 4);
    expect([stats.pulls, stats.peak]).toEqual([4, 1]);
  });
  it('maxParallelImagePulls bounds parallel pulls; unset, they all run at once', async () => {
    const a = slowRegistry(20);
    const results = await pullAll(
      new ImageManager({ images: a.svc, clock: new FakeClock(), serializeImagePulls: false, maxParallelImagePulls: 2 }),
      6,
    );
    expect(results.every((r) => r.ok)).toBe(true);
    expect([a.stats.pulls, a.stats.peak]).toEqual([6, 2]);
    const b = slowRegistry(20);
    await pullAll(new ImageManager({ images: b.svc, clock: new FakeClock(), serializeImagePulls: false }), 6);
    expect(b.stats.peak).toBe(6);
  });
  it('pulls beyond registryPullQPS / registryBurst fail at once with "pull QPS exceeded" and back off', async () => {
    const clock = new FakeClock(1_000_000);
    const { svc, stats } = slowRegistry(1);
    const m = new ImageManager({
      images: svc,
      clock,
      serializeImagePulls: false,
      pullLimiter: new TokenBucket(1, 2, () => clock.now()),
    });
    const results = await pullAll(m, 3);
    expect(results.slice(0, 2).every((r) => r.ok)).toBe(true);
    expect(results[2]).toMatchObject({
      ok: false,
      reason: 'ErrImagePull',
      message: 'pull QPS exceeded',
      eventMessage: 'Failed to pull image "img2:1": pull QPS exceeded',
    });
    expect(stats.pulls).toBe(2);
    // Within the backoff the pod waits, told the last pull's error; after it (and a token later) the pull goes through.
    const p = podWith('img2:1');
    expect(await m.ensureImageExists(p, p.spec.containers[0])).toMatchObject({
      ok: false,
      reason: 'ImagePullBackOff',
      message: 'Back-off pulling image "img2:1": ErrImagePull: pull QPS exceeded',
    });
    clock.advance(10_000);
    expect(await m.ensureImageExists(p, p.spec.containers[0])).toMatchObject({ ok: true, pulled: true });
  });
  it('asks for credentials only when it pulls (a credential provider plugin is not run for a present image)', async () => {
    const { svc } = slowRegistry(1);
    const m = new ImageManager({ images: svc, clock: new FakeClock(), serializeImagePulls: true });
    let asked = 0;
    const auth = async () => {
      asked++;
      return [];
    };
    const p = podWith('img:1');
    const c = { ...p.spec.containers[0], imagePullPolicy: 'IfNotPresent' as const };
    expect(await m.ensureImageExists(p, c, { auth })).toMatchObject({ ok: true, pulled: true });
    expect(await m.ensureImageExists(p, c, { auth })).toMatchObject({ ok: true, pulled: false });
    expect(asked).toBe(1);
  });
});

describe('image manager events', () => {
  it("records a failed image inspection as upstream's: InspectFailed, then the container's Error: ErrImageInspect", async () => {
    const events: [string, string, string][] = [];
    const svc = {
      listImages: async () => [],
      imageStatus: async (): Promise<cri.Image | null> => {
        throw new Error('rpc error: code = Unavailable desc = connection refused');
      },
      pullImage: async (spec: cri.ImageSpec) => spec.image,
      removeImage: async () => {},
      imageFsInfo: async () => ({ image_filesystems: [] }),
    } satisfies ImageService;
    const m = new ImageManager({
      images: svc,
      clock: new FakeClock(),
      serializeImagePulls: true,
      events: { record: (_ref, type, reason, message) => events.push([type, reason, message]) },
    });
    const p = podWith('busybox:1');
    expect(await m.ensureImageExists(p, p.spec.containers[0])).toMatchObject({ ok: false, reason: 'ErrImageInspect' });
    expect(events).toEqual([
      [
        'Warning',
        'InspectFailed',
        'Failed to inspect image "busybox:1": rpc error: code = Unavailable desc = connection refused',
      ],
      ['Warning', 'Failed', 'Error: ErrImageInspect'],
    ]);
  });
});
