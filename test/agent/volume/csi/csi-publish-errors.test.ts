/**
 * A failed NodePublishVolume, as upstream's csi_mounter SetUpAt handles it: a final error of a first publish removes
 * the volume's directory and record; an uncertain error, a republish, or a volume an earlier kubelet run set up keep
 * them for the teardown. The driver is a CsiClient double answering with grpc-go status errors (the e2e test in
 * test/e2e/csi.test.ts runs the same cases against a grpc-js driver).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CsiDrivers } from '../../../../src/agent/volume/csi/csi-drivers.js';
import type { CsiClient } from '../../../../src/agent/volume/csi/csi-client.js';
import { CsiVolumes } from '../../../../src/agent/volume/plugins/csi.js';
import { GoStatusError } from '../../../../src/cri/unary-caller.js';
import { GrpcCode } from '../../../../src/cri/grpc-status.js';
import type { Pod } from '../../../../src/api/types.js';
import type { SetUpContext, VolumeHost } from '../../../../src/agent/volume/types.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-csi-publish-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const DRIVER = 'd.csi';

/** Driver `d.csi`, whose NodePublishVolume fails with gRPC `code`. */
function failingDriver(code: number): { drivers: CsiDrivers; published: string[] } {
  const published: string[] = [];
  const client: Partial<CsiClient> = {
    nodeCapabilities: async () => new Set<string>(),
    nodePublishVolume: async (req) => {
      published.push(req.target_path);
      throw new GoStatusError(code, `rpc error: code = ${code} desc = injected`);
    },
    close() {},
  };
  const drivers = new CsiDrivers({ connect: () => client as CsiClient });
  drivers.add(DRIVER, '/sock', '1.0.0');
  return { drivers, published };
}

const host: VolumeHost = {
  getObject: async () => null,
  getPersistentVolume: async () => null,
  // The CSIDriver object: inline (Ephemeral) volumes allowed, no attach.
  getClusterObject: async <T>() =>
    ({ metadata: { name: DRIVER }, spec: { attachRequired: false, volumeLifecycleModes: ['Ephemeral'] } }) as T,
  getToken: async () => ({ token: 't', expirationTimestamp: '2026-12-01T00:00:00Z' }),
  hasApiserver: true,
  downward: { nodeName: 'n', hostIPs: [], podIPs: [] },
  isRoot: false,
};

/** The set-up context of the pod `uid`'s inline CSI volume `data` under `root`. */
function context(root: string, uid: string, remount = false): SetUpContext {
  const pod: Pod = {
    metadata: { name: 'p', namespace: 'default', uid },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  } as Pod;
  const volumesDir = join(root, 'pods', uid, 'volumes');
  return {
    pod,
    volume: { name: 'data', csi: { driver: DRIVER } },
    dir: join(volumesDir, 'kubernetes.io~csi', 'data'),
    volumesDir,
    host,
    remount,
  };
}

const volumeDir = (root: string, uid: string) => join(root, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'data');

describe('CSI NodePublishVolume errors', () => {
  it('a final error of a first publish removes the target, the record and the volume directory', async () => {
    const root = join(base, 'final');
    const { drivers, published } = failingDriver(GrpcCode.INVALID_ARGUMENT);
    const csi = new CsiVolumes({ drivers, rootDir: root, nodeName: 'n' });
    await expect(csi.plugin.setUp(context(root, 'u1'))).rejects.toThrow('injected');
    expect(published).toEqual([join(volumeDir(root, 'u1'), 'mount')]);
    expect(existsSync(volumeDir(root, 'u1'))).toBe(false);
  });

  it('an uncertain error (Unavailable) keeps them: the driver may still publish', async () => {
    const root = join(base, 'uncertain');
    const { drivers } = failingDriver(GrpcCode.UNAVAILABLE);
    const csi = new CsiVolumes({ drivers, rootDir: root, nodeName: 'n' });
    await expect(csi.plugin.setUp(context(root, 'u1'))).rejects.toThrow('injected');
    expect(existsSync(join(volumeDir(root, 'u1'), 'vol_data.json'))).toBe(true);
  });

  it('a republish keeps them (kubernetes/kubernetes#139045)', async () => {
    const root = join(base, 'remount');
    const { drivers } = failingDriver(GrpcCode.INVALID_ARGUMENT);
    const csi = new CsiVolumes({ drivers, rootDir: root, nodeName: 'n' });
    await expect(csi.plugin.setUp(context(root, 'u1', true))).rejects.toThrow('injected');
    expect(existsSync(join(volumeDir(root, 'u1'), 'vol_data.json'))).toBe(true);
  });

  it('a volume an earlier kubelet run set up keeps them (kubernetes/kubernetes#136603); one this run wrote does not', async () => {
    const root = join(base, 'reconstructed');
    mkdirSync(join(volumeDir(root, 'u1'), 'mount'), { recursive: true });
    writeFileSync(
      join(volumeDir(root, 'u1'), 'vol_data.json'),
      JSON.stringify({ specVolID: 'data', volumeHandle: 'h', driverName: DRIVER, volumeLifecycleMode: 'Ephemeral' }),
    );
    const { drivers } = failingDriver(GrpcCode.INVALID_ARGUMENT);
    const csi = new CsiVolumes({ drivers, rootDir: root, nodeName: 'n' });
    await expect(csi.plugin.setUp(context(root, 'u1'))).rejects.toThrow('injected');
    expect(existsSync(join(volumeDir(root, 'u1'), 'vol_data.json'))).toBe(true);
    // Another pod's volume, first published by this run: removed.
    await expect(csi.plugin.setUp(context(root, 'u2'))).rejects.toThrow('injected');
    expect(existsSync(volumeDir(root, 'u2'))).toBe(false);
  });
});
