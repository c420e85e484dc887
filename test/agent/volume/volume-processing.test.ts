/**
 * A volume the kubelet cannot resolve to what to mount (upstream's desired-state populator): a claim not bound, not
 * found, being deleted, or its PersistentVolume not found or not bound to it (no claimRef, or another claim's). Upstream's wait ends at once, and syncPod reports it:
 * FailedMount "Unable to attach or mount volumes: … failed to process volumes=[…]: error processing PVC …". No
 * "MountVolume.SetUp failed" event, which is for a volume that was resolved and failed to mount.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { claimPlugins } from '../../../src/agent/volume/plugins/persistent-volume.js';
import type { VolumeHost } from '../../../src/agent/volume/types.js';
import { VolumeManager } from '../../../src/agent/volume/volume-manager.js';
import { unableToMountMessage } from '../../../src/agent/volume/volume-processing.js';

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
