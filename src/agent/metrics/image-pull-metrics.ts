/**
 * kubelet_image_pull_duration_seconds as upstream's: each successful pull's time, waiting for a
 * pull slot included, by the pulled image's size bucket ("0-10MB" … "GT100GB").
 */
import { Histogram, type Registry } from './registry.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** upstream imageSizeBuckets: lower bound → label. */
const SIZE_BUCKETS: [number, string][] = [
  [0, '0-10MB'],
  [10 * MiB, '10MB-100MB'],
  [100 * MiB, '100MB-500MB'],
  [500 * MiB, '500MB-1GB'],
  [1 * GiB, '1GB-5GB'],
  [5 * GiB, '5GB-10GB'],
  [10 * GiB, '10GB-20GB'],
  [20 * GiB, '20GB-30GB'],
  [30 * GiB, '30GB-40GB'],
  [40 * GiB, '40GB-60GB'],
  [60 * GiB, '60GB-100GB'],
  [100 * GiB, 'GT100GB'],
];

/** upstream GetImageSizeBucket (pure). */
export function imageSizeBucket(sizeBytes: number): string {
  for (let i = SIZE_BUCKETS.length - 1; i >= 0; i--) if (sizeBytes >= SIZE_BUCKETS[i][0]) return SIZE_BUCKETS[i][1];
  return SIZE_BUCKETS[0][1];
}

/** Registers the histogram on `r`; the returned function observes one pull. */
export function registerImagePullMetrics(r: Registry): (seconds: number, sizeBytes: number) => void {
  const h = r.register(
    new Histogram(
      'kubelet_image_pull_duration_seconds',
      '[ALPHA] Duration in seconds to pull an image.',
      ['image_size_in_bytes'],
      [1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600],
    ),
  );
  return (seconds, sizeBytes) => h.observe({ image_size_in_bytes: imageSizeBucket(sizeBytes) }, seconds);
}
