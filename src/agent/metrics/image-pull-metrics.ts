/**
 * kubelet_image_pull_duration_seconds as upstream's: each successful pull's time, waiting for a
 * pull slot included, by the pulled image's size bucket ("0-10MB" … "GT100GB").
 */
import type { ImageRequestCounters } from '../images/image-manager.js';
import { Counter, Gauge, Histogram, type Registry } from './registry.js';

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

/**
 * The image manager's counts, as upstream's (pkg/kubelet/images and its pull manager, KubeletEnsureSecretPulledImages):
 * kubelet_image_manager_ensure_image_requests_total{pull_policy,present_locally,pull_required} ("unknown" where an
 * error came first) and kubelet_imagemanager_image_mustpull_checks_total{result}.
 */
export function registerImageRequestMetrics(r: Registry): ImageRequestCounters {
  const ensured = r.register(
    new Counter(
      'kubelet_image_manager_ensure_image_requests_total',
      '[ALPHA] Number of ensure-image requests processed by the kubelet.',
      ['pull_policy', 'present_locally', 'pull_required'],
    ),
  );
  const checks = r.register(
    new Counter(
      'kubelet_imagemanager_image_mustpull_checks_total',
      '[ALPHA] Counter for how many times kubelet checked whether credentials need to be re-verified to access an image',
      ['result'],
    ),
  );
  const known = (b: boolean | undefined) => (b === undefined ? 'unknown' : String(b));
  return {
    ensured: (q) =>
      ensured.inc({
        pull_policy: q.pullPolicy,
        present_locally: known(q.presentLocally),
        pull_required: known(q.pullRequired),
      }),
    mustPullChecked: (result) => checks.inc({ result }),
  };
}

/** kubelet_imagemanager_ondisk_pullintents / _pulledrecords: the pull records' files, counted at each scrape. */
export function registerPullRecordGauges(r: Registry, counts: () => { intents: number; records: number }): void {
  r.register(
    new Gauge(
      'kubelet_imagemanager_ondisk_pullintents',
      '[ALPHA] Number of ImagePullIntents stored on disk.',
      [],
      (g) => g.set(undefined, counts().intents),
    ),
  );
  r.register(
    new Gauge(
      'kubelet_imagemanager_ondisk_pulledrecords',
      '[ALPHA] Number of ImagePulledRecords stored on disk.',
      [],
      (g) => g.set(undefined, counts().records),
    ),
  );
}
