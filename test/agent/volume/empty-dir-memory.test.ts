/** The size of a memory-backed emptyDir (upstream SizeMemoryBackedVolumes' calculateEmptyDirMemorySize). */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { memoryBackedSize } from '../../../src/agent/volume/plugins/empty-dir.js';

const Mi = 1024 ** 2;
const pod = (...limits: (string | undefined)[]): Pod => ({
  metadata: { name: 'p', uid: 'u' },
  spec: {
    containers: limits.map((memory, i) => ({
      name: `c${i}`,
      image: 'busybox',
      resources: memory ? { limits: { memory } } : {},
    })),
  },
});

describe('memory-backed emptyDir size', () => {
  it('is the least of the node allocatable, the pod memory limit and the sizeLimit', () => {
    expect(memoryBackedSize(pod('64Mi', '64Mi'), 0, 1024 * Mi)).toBe(128 * Mi);
    expect(memoryBackedSize(pod('64Mi'), 16 * Mi, 1024 * Mi)).toBe(16 * Mi);
    expect(memoryBackedSize(pod('64Mi'), 256 * Mi, 1024 * Mi)).toBe(64 * Mi);
  });
  it('ignores a pod limit unless every container declares one, and a limit above the node allocatable', () => {
    expect(memoryBackedSize(pod('64Mi', undefined), 0, 1024 * Mi)).toBe(1024 * Mi);
    expect(memoryBackedSize(pod('4Gi'), 0, 1024 * Mi)).toBe(1024 * Mi);
  });
  it('is 0 (the tmpfs default) when nothing bounds it', () => {
    expect(memoryBackedSize(pod(undefined), 0, 0)).toBe(0);
    expect(memoryBackedSize(pod(undefined), 8 * Mi, 0)).toBe(8 * Mi);
  });
});
