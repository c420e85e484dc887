/**
 * The collections' warnings on the Node, as upstream's: a container collection that fails (ContainerGCFailed) every
 * time; an image collection that fails from the second failure in a row (ImageGCFailed); an image filesystem of no
 * capacity (InvalidDiskCapacity) and a pass that cannot free what the thresholds ask (FreeDiskSpaceFailed), which
 * fail the pass.
 */
import { describe, expect, it } from 'vitest';
import { GarbageCollector } from '../../../src/agent/gc/garbage-collector.js';
import { freeDiskSpaceFailedMessage, ImageGc } from '../../../src/agent/gc/image-gc.js';
import type { RuntimeManager } from '../../../src/agent/runtime/runtime-manager.js';
import { defaultContainerGcPolicy } from '../../../src/agent/gc/container-gc-plan.js';
import type { ImageService, RuntimeService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';

type NodeEvent = [string, string, string];
const tick = async (clock: FakeClock, ms: number) => {
  clock.advance(ms);
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

function imageGc(mountpoint: string, events: NodeEvent[], clock = new FakeClock()) {
  const image = { id: 'unused', repo_tags: ['unused:1'], repo_digests: [], size: 10 } as unknown as cri.Image;
  return new ImageGc({
    runtime: { listContainers: async () => [] } as unknown as RuntimeService,
    images: {
      listImages: async () => [image],
      removeImage: async () => {},
      imageFsInfo: async () => ({ image_filesystems: [{ timestamp: 0, fs_id: { mountpoint } }] }),
    } as unknown as ImageService,
    clock,
    logger,
    // Any usage at all is over the high threshold: far more than the one 10-byte image is asked for.
    policy: { highThresholdPercent: 1, lowThresholdPercent: 0, minAgeMs: 0 },
    protectedImages: async () => [],
    nodeEvents: (type, reason, message) => events.push([type, reason, message]),
  });
}

describe('image GC warnings on the Node', () => {
  it('cannot free what the thresholds ask: FreeDiskSpaceFailed, and the pass fails', async () => {
    const events: NodeEvent[] = [];
    await expect(imageGc('/', events).garbageCollect()).rejects.toThrow(/^Insufficient free disk space on the node/);
    expect(events).toHaveLength(1);
    expect(events[0][0]).toBe('Warning');
    expect(events[0][1]).toBe('FreeDiskSpaceFailed');
    // Upstream's v1.35+ wording: how full the disk is, and what the pass freed (the one 10-byte image).
    expect(events[0][2]).toMatch(
      /^Insufficient free disk space on the node's image filesystem \(\d+% of \d+\.\d [KMGT]iB used\)/,
    );
    expect(events[0][2]).toContain('. Failed to free sufficient space by deleting unused images (freed 10 bytes). ');
  });

  it('spells the disk as upstream: whole percent used, one decimal of the largest binary unit', () => {
    const GiB = 1024 ** 3;
    expect(freeDiskSpaceFailedMessage(100 * GiB, 10 * GiB, 1_073_741_824)).toBe(
      "Insufficient free disk space on the node's image filesystem (90% of 100.0 GiB used). " +
        'Failed to free sufficient space by deleting unused images (freed 1073741824 bytes). ' +
        'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.',
    );
    expect(freeDiskSpaceFailedMessage(Math.round(26.4 * GiB), Math.round(3.2 * GiB), 0)).toContain('(88% of 26.4 GiB');
    expect(freeDiskSpaceFailedMessage(512 * 1024 ** 2, 0, 0)).toContain('(100% of 512.0 MiB used)');
  });

  it('an image filesystem of no capacity: InvalidDiskCapacity', async () => {
    const events: NodeEvent[] = [];
    // procfs reports no blocks.
    await expect(imageGc('/proc', events).garbageCollect()).rejects.toThrow('invalid capacity 0 on image filesystem');
    expect(events).toEqual([['Warning', 'InvalidDiskCapacity', 'invalid capacity 0 on image filesystem']]);
  });
});

describe('the collection loops', () => {
  it('warn of every failed container collection, and of failed image collections from the second in a row', async () => {
    const clock = new FakeClock();
    const events: NodeEvent[] = [];
    let imageFailures = 0;
    const gc = new GarbageCollector({
      runtime: {} as RuntimeService,
      runtimeManager: {
        listRuntimePods: async () => {
          throw new Error('rpc error: code = Unavailable desc = connection refused');
        },
      } as unknown as RuntimeManager,
      imageGc: {
        garbageCollect: async () => {
          imageFailures++;
          throw new Error('ImageFsInfo failed');
        },
      } as unknown as ImageGc,
      clock,
      logger,
      policy: defaultContainerGcPolicy,
      podLogsDir: '/nonexistent',
      rootDir: '/nonexistent',
      cgroupFsRoot: '',
      cgroupNaming: { cgroupRoot: '/' },
      isActive: () => false,
      nodeEvents: (type, reason, message) => events.push([type, reason, message]),
    });
    const stop = new AbortController();
    gc.start({ signal: stop.signal });
    await tick(clock, 0);
    // The image collection ran once (at start): its first failure is only logged.
    expect(imageFailures).toBe(1);
    expect(events).toEqual([]);
    await tick(clock, 60_000);
    expect(events).toContainEqual([
      'Warning',
      'ContainerGCFailed',
      'rpc error: code = Unavailable desc = connection refused',
    ]);
    await tick(clock, 5 * 60_000);
    expect(imageFailures).toBe(2);
    expect(events).toContainEqual(['Warning', 'ImageGCFailed', 'ImageFsInfo failed']);
    stop.abort();
  });
});
