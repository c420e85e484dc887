/**
 * A volume the kubelet cannot resolve to what to mount (upstream's desired-state populator): a claim not bound, not
 * found, being deleted, or its PersistentVolume not found or not bound to it (no claimRef, or another claim's).
 * Upstream's wait ends at once, and syncPod reports it: FailedMount "Unable to attach or mount volumes: … failed to
 * process volumes=[…]: error processing PVC …". No "MountVolume.SetUp failed" event, which is for a volume that was
 * resolved and failed to mount.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { claimPlugins } from '../../../src/agent/volume/plugins/persistent-volume.js';
import type { VolumeHost, VolumePlugin } from '../../../src/agent/volume/types.js';
import { AttachError } from '../../../src/agent/volume/attach-limit.js';
import { VolumeManager } from '../../../src/agent/volume/volume-manager.js';
import { unableToMountMessage, VolumeOperationError } from '../../../src/agent/volume/volume-processing.js';

const root = mkdtempSync(join(tmpdir(), 'tsk-volume-processing-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** An apiserver double holding `claims` (by name) and `volumes` (PersistentVolumes by name). */
function hostWith(claims: Record<string, object>, volumes: Record<string, object> = {}): VolumeHost {
  return {
    hasApiserver: true,
    getObject: async (_resource: string, _namespace: string, name: string) => claims[name] ?? null,
    getPersistentVolume: async (name: string) => volumes[name] ?? null,
  } as unknown as VolumeHost;
}

const pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'uid-p' },
  spec: {
    containers: [{ name: 'c', image: 'i' }],
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'pending' } },
      { name: 'logs', persistentVolumeClaim: { claimName: 'gone' } },
      { name: 'more', persistentVolumeClaim: { claimName: 'orphan' } },
      { name: 'early', persistentVolumeClaim: { claimName: 'early' } },
      { name: 'stale', persistentVolumeClaim: { claimName: 'recreated' } },
    ],
  },
} as unknown as Pod;

describe('volumes that cannot be resolved', () => {
  it("are reported at once with upstream's lists and reasons, without a MountVolume.SetUp event", async () => {
    const events: string[] = [];
    const volumes = new VolumeManager({
      rootDir: root,
      host: hostWith(
        {
          pending: { status: { phase: 'Pending' } },
          orphan: { spec: { volumeName: 'pv-missing' }, status: { phase: 'Bound' } },
          // The claim says Bound before the binder has written the volume's claimRef.
          early: { metadata: { uid: 'uid-early' }, spec: { volumeName: 'pv-free' }, status: { phase: 'Bound' } },
          // A claim deleted and created again under its name: the volume still names the first one.
          recreated: { metadata: { uid: 'uid-new' }, spec: { volumeName: 'pv-taken' }, status: { phase: 'Bound' } },
        },
        {
          'pv-free': { metadata: { name: 'pv-free' }, spec: { hostPath: { path: root } } },
          'pv-taken': {
            metadata: { name: 'pv-taken' },
            spec: { hostPath: { path: root }, claimRef: { namespace: 'default', name: 'recreated', uid: 'uid-old' } },
          },
        },
      ),
      clock: new FakeClock(),
      logger: createLogger({ level: 'fatal' }),
      plugins: claimPlugins(),
      events: { record: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
    });
    const result = await volumes.mountPod(pod);
    expect(result).toMatchObject({
      ok: false,
      report:
        'Unable to attach or mount volumes: unmounted volumes=[data early logs more stale], unattached volumes=[], ' +
        'failed to process volumes=[data early logs more stale]: ' +
        'error processing PVC default/early: found PV object pv-free but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim; ' +
        'error processing PVC default/gone: failed to fetch PVC from API server: persistentvolumeclaims "gone" not found; ' +
        'error processing PVC default/orphan: failed to fetch PV pv-missing from API server: persistentvolumes "pv-missing" not found; ' +
        'error processing PVC default/pending: PVC is not bound; ' +
        'error processing PVC default/recreated: found PV object pv-taken but its pv.Spec.ClaimRef.UID uid-old does not point to claim.UID uid-new',
    });
    expect(events).toEqual([]);
  });

  it("words the lists as Go's %v of sorted names", () => {
    expect(unableToMountMessage({ unmounted: ['b', 'a'], unattached: [], notProcessed: ['b'], cause: 'x' })).toBe(
      'Unable to attach or mount volumes: unmounted volumes=[a b], unattached volumes=[], failed to process volumes=[b]: x',
    );
  });
});

describe('a failed set-up step', () => {
  const steps = ['attach', 'stage', 'publish', 'map', 'none'] as const;
  /** A plugin whose volume `<step>` fails at that step; `none`, with an error of no named step. */
  const failing: VolumePlugin = {
    dirName: 'test~failing',
    field: 'failing',
    remountEachSync: false,
    setUp(ctx) {
      const step = (ctx.volume.failing as { step: (typeof steps)[number] }).step;
      if (step === 'attach') throw new AttachError('volume attachment is being deleted', false);
      if (step === 'none') throw new Error('boom');
      throw new VolumeOperationError(step, 'boom');
    },
  };
  const podUsing = (name: string, as: 'volumeMounts' | 'volumeDevices') =>
    ({
      metadata: { name, namespace: 'default', uid: `uid-${name}` },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'i',
            [as]: steps.map((step) => ({ name: step, mountPath: `/${step}`, devicePath: `/dev/${step}` })),
          },
        ],
        volumes: steps.map((step) => ({ name: step, failing: { step } })),
      },
    }) as unknown as Pod;

  it('is named as upstream names it: MountVolume.* for a mounted volume, MapVolume.* and FailedMapVolume for a device', async () => {
    const events: string[] = [];
    const volumes = new VolumeManager({
      rootDir: root,
      host: hostWith({}),
      clock: new FakeClock(),
      logger: createLogger({ level: 'fatal' }),
      plugins: [failing],
      events: { record: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
    });
    await volumes.mountPod(podUsing('mounts', 'volumeMounts'));
    await volumes.mountPod(podUsing('devices', 'volumeDevices'));
    expect(events.sort()).toEqual(
      [
        'Warning FailedMount MountVolume.WaitForAttach failed for volume "attach" : volume attachment is being deleted',
        'Warning FailedMount MountVolume.MountDevice failed for volume "stage" : boom',
        'Warning FailedMount MountVolume.SetUp failed for volume "publish" : boom',
        'Warning FailedMount MountVolume.SetUp failed for volume "map" : boom',
        'Warning FailedMount MountVolume.SetUp failed for volume "none" : boom',
        'Warning FailedMapVolume MapVolume.WaitForAttach failed for volume "attach" : volume attachment is being deleted',
        'Warning FailedMapVolume MapVolume.SetUpDevice failed for volume "stage" : boom',
        'Warning FailedMapVolume MapVolume.MapPodDevice failed for volume "publish" : boom',
        'Warning FailedMapVolume MapVolume.MapBlockVolume failed for volume "map" : boom',
        'Warning FailedMapVolume MapVolume.SetUpDevice failed for volume "none" : boom',
      ].sort(),
    );
  });
});
