/**
 * VolumeAttachmentLimitExceeded (upstream MutableCSINodeAllocatableCount): a pod whose volume cannot be attached
 * because the node has no attachment left is rejected once upstream's attach-and-mount wait has passed, not before; any
 * other attach failure keeps it waiting.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import {
  AttachError,
  attachLimitRejection,
  mountWaitTimeout,
  POD_ATTACH_AND_MOUNT_TIMEOUT_MS,
} from '../../../src/agent/volume/attach-limit.js';
import { attachedContext } from '../../../src/agent/volume/csi/csi-inputs.js';
import type { VolumeHost, VolumePlugin } from '../../../src/agent/volume/types.js';
import { VolumeManager } from '../../../src/agent/volume/volume-manager.js';

const logger = createLogger({ level: 'fatal' });
const REJECTION =
  'Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[data logs], unattached volumes=[data], failed to process volumes=[]: context deadline exceeded';

/** A VolumeHost whose only object is the VolumeAttachment `attachment`. */
function hostWith(attachment: object | null): VolumeHost {
  return { getClusterObject: async () => attachment } as unknown as VolumeHost;
}

describe('an exhausted attachment', () => {
  it("is ResourceExhausted (gRPC 8) on a driver that keeps the node's limit current, nothing else", async () => {
    const failed = (errorCode?: number) => ({
      status: { attached: false, attachError: { message: 'rpc error: code = ResourceExhausted', errorCode } },
    });
    const thrown = (attachment: object, limitUpdated: boolean) =>
      attachedContext(hostWith(attachment), 'd', 'vol-1', 'n1', limitUpdated).then(
        () => undefined,
        (err: unknown) => err as AttachError,
      );
    const exhausted = await thrown(failed(8), true);
    expect([exhausted?.constructor, exhausted?.exhausted, exhausted?.message]).toEqual([
      AttachError,
      true,
      'attachment for vol-1 failed: rpc error: code = ResourceExhausted',
    ]);
    expect((await thrown(failed(8), false))?.exhausted).toBe(false);
    expect((await thrown(failed(13), true))?.exhausted).toBe(false);
    expect((await thrown({ status: { attached: false } }, true))?.exhausted).toBe(false);
  });

  it("rejects with upstream's message once the wait has passed, not before", () => {
    const o = { unmounted: ['logs', 'data'], unattached: new Map([['data', true]]), waitingSinceMs: 0 };
    expect(attachLimitRejection({ ...o, nowMs: POD_ATTACH_AND_MOUNT_TIMEOUT_MS - 1 })).toBeUndefined();
    expect(attachLimitRejection({ ...o, nowMs: POD_ATTACH_AND_MOUNT_TIMEOUT_MS })).toBe(REJECTION);
    expect(
      attachLimitRejection({ ...o, unattached: new Map([['data', false]]), nowMs: POD_ATTACH_AND_MOUNT_TIMEOUT_MS }),
    ).toBeUndefined();
  });
});

describe("upstream's attach-and-mount wait", () => {
  it('reports a pod whose volumes are not all mounted after 2 min 3 s, then every 2 min 3 s again', () => {
    const o = { unmounted: ['logs', 'data'], unattached: [], sinceMs: 1000 };
    expect(mountWaitTimeout({ ...o, nowMs: 1000 + POD_ATTACH_AND_MOUNT_TIMEOUT_MS - 1 })).toBeUndefined();
    expect(mountWaitTimeout({ ...o, nowMs: 1000 + POD_ATTACH_AND_MOUNT_TIMEOUT_MS })).toBe(
      'Unable to attach or mount volumes: unmounted volumes=[data logs], unattached volumes=[], ' +
        'failed to process volumes=[]: context deadline exceeded',
    );
  });
});

describe('the volume manager', () => {
  it('reports the rejection for a pod that waited its attach-and-mount time on an exhausted attachment', async () => {
    const clock = new FakeClock();
    let exhausted = false;
    const plugin: VolumePlugin = {
      dirName: 'kubernetes.io~csi',
      field: 'csi',
      remountEachSync: false,
      setUp: async () => {
        throw new AttachError('attachment for vol-1 failed: limit', exhausted);
      },
    };
    const stuck: VolumePlugin = {
      dirName: 'kubernetes.io~fc',
      field: 'fc',
      remountEachSync: false,
      setUp: async () => {
        throw new Error('no device');
      },
    };
    const volumes = new VolumeManager({
      rootDir: mkdtempSync(join(tmpdir(), 'tsk-attach-limit-')),
      host: hostWith(null),
      clock,
      logger,
      plugins: [plugin, stuck],
    });
    const pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'uid-1' },
      spec: {
        containers: [{ name: 'c', image: 'i' }],
        volumes: [
          { name: 'data', csi: { driver: 'd' } },
          { name: 'logs', fc: {} },
        ],
      },
    } as unknown as Pod;
    const mount = async () => {
      const result = await volumes.mountPod(pod);
      return result.ok ? 'mounted' : (result.attachLimitExceeded ?? 'waiting');
    };
    // Not attached for another reason: the pod waits however long, told so each time it waited the timeout again.
    expect(await mount()).toBe('waiting');
    clock.advance(POD_ATTACH_AND_MOUNT_TIMEOUT_MS + 1000);
    const timedOut = await volumes.mountPod(pod);
    expect(timedOut).toMatchObject({
      ok: false,
      report:
        'Unable to attach or mount volumes: unmounted volumes=[data logs], unattached volumes=[data], ' +
        'failed to process volumes=[]: context deadline exceeded',
    });
    expect(await volumes.mountPod(pod)).not.toHaveProperty('report');
    expect(await mount()).toBe('waiting');
    // The attachment ran out of slots: rejected, since the pod has waited long enough.
    exhausted = true;
    clock.advance(130_000);
    expect(await mount()).toBe(REJECTION);
  });
});
