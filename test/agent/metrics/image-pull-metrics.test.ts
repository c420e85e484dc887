import { describe, expect, it } from 'vitest';
import { imageSizeBucket } from '../../../src/agent/metrics/image-pull-metrics.js';

describe('imageSizeBucket (upstream GetImageSizeBucket)', () => {
  const MiB = 1024 * 1024;
  it.each([
    [0, '0-10MB'],
    [10 * MiB - 1, '0-10MB'],
    [10 * MiB, '10MB-100MB'],
    [499 * MiB, '100MB-500MB'],
    [1024 * MiB, '1GB-5GB'],
    [64 * 1024 * MiB, '60GB-100GB'],
    [200 * 1024 * MiB, 'GT100GB'],
  ])('%d bytes → %s', (size, label) => expect(imageSizeBucket(size)).toBe(label));
});
