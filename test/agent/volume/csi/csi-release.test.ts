/** Releasing CSI volumes by their records: what a record names outside the root dir is never unmounted or removed. */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CsiDrivers } from '../../../../src/agent/volume/csi/csi-drivers.js';
import { CsiRelease } from '../../../../src/agent/volume/csi/csi-release.js';
import type { CsiClient } from '../../../../src/agent/volume/csi/csi-client.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-csi-release-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Driver `d.csi` registered, answering with `client`'s calls. */
function driversServing(client: Pick<CsiClient, 'nodeUnpublishVolume' | 'nodeUnstageVolume'>): CsiDrivers {
  const drivers = new CsiDrivers({ connect: () => ({ ...client, close() {} }) as unknown as CsiClient });
  drivers.add('d.csi', '/sock', '1.0.0');
  return drivers;
}

describe('CsiRelease', () => {
  it('ignores record paths outside the root dir (a tampered vol_data.json removes nothing of the host)', async () => {
    const root = join(base, 'root');
    const outsideFile = join(base, 'precious-file');
    const outsideDir = join(base, 'precious-dir');
    writeFileSync(outsideFile, 'keep');
    mkdirSync(outsideDir);
    const calls: string[] = [];
    const drivers = driversServing({
      nodeUnpublishVolume: async (id, target) => void calls.push(`unpublish ${id} ${target}`),
      nodeUnstageVolume: async (id, staging) => void calls.push(`unstage ${id} ${staging}`),
    });
    const stageDir = join(root, 'plugins', 'kubernetes.io', 'csi', 'd.csi', 'sha');
    mkdirSync(stageDir, { recursive: true });
    writeFileSync(
      join(stageDir, 'vol_data.json'),
      JSON.stringify({
        volumeHandle: 'h',
        driverName: 'd.csi',
        stagingTargetPath: join(stageDir, 'globalmount'),
        cleanup: [outsideDir],
      }),
    );
    const dir = join(root, 'pods', 'u1', 'volumes', 'kubernetes.io~csi', 'pv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'vol_data.json'),
      JSON.stringify({
        volumeHandle: 'h',
        driverName: 'd.csi',
        podDeviceMapPath: outsideFile,
        publishPath: outsideFile,
        stagingTargetPath: join(stageDir, 'globalmount'),
      }),
    );
    await new CsiRelease({ drivers, rootDir: root }).tearDown(dir);
    expect(calls).toEqual([`unpublish h ${join(dir, 'mount')}`, `unstage h ${join(stageDir, 'globalmount')}`]);
    expect(existsSync(outsideFile)).toBe(true);
    expect(existsSync(outsideDir)).toBe(true);
    expect(existsSync(stageDir)).toBe(false);
  });

  it('unstages once when a teardown and housekeeping both find the volume unused', async () => {
    const root = join(base, 'root-race');
    const calls: string[] = [];
    let finishUnstage = () => {};
    let unstageStarted = () => {};
    const started = new Promise<void>((resolve) => (unstageStarted = resolve));
    const drivers = driversServing({
      nodeUnpublishVolume: async () => void calls.push('unpublish'),
      nodeUnstageVolume: async () => {
        calls.push('unstage');
        if (calls.filter((c) => c === 'unstage').length > 1) return; // only the first is held
        unstageStarted();
        await new Promise<void>((finish) => (finishUnstage = finish));
      },
    });
    const stageDir = join(root, 'plugins', 'kubernetes.io', 'csi', 'd.csi', 'sha');
    mkdirSync(stageDir, { recursive: true });
    const record = { volumeHandle: 'h', driverName: 'd.csi', stagingTargetPath: join(stageDir, 'globalmount') };
    writeFileSync(join(stageDir, 'vol_data.json'), JSON.stringify(record));
    const dir = join(root, 'pods', 'u1', 'volumes', 'kubernetes.io~csi', 'pv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'vol_data.json'), JSON.stringify(record));
    const release = new CsiRelease({ drivers, rootDir: root });

    const teardown = release.tearDown(dir);
    await started; // the pod's record is gone, the staging's is still there
    const housekeeping = release.releaseUnused();
    await new Promise((r) => setTimeout(r, 20)); // housekeeping has found it unused and waits on the volume
    finishUnstage();
    await Promise.all([teardown, housekeeping]);
    expect(calls).toEqual(['unpublish', 'unstage']);
    expect(existsSync(stageDir)).toBe(false);
  });
});
