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

describe('CsiRelease', () => {
  it('ignores record paths outside the root dir (a tampered vol_data.json removes nothing of the host)', async () => {
    const root = join(base, 'root');
    const outsideFile = join(base, 'precious-file');
    const outsideDir = join(base, 'precious-dir');
    writeFileSync(outsideFile, 'keep');
    mkdirSync(outsideDir);
    const calls: string[] = [];
    const client = {
      nodeUnpublishVolume: async (id: string, target: string) => void calls.push(`unpublish ${id} ${target}`),
      nodeUnstageVolume: async (id: string, staging: string) => void calls.push(`unstage ${id} ${staging}`),
      close() {},
    } as unknown as CsiClient;
    const drivers = new CsiDrivers({ connect: () => client });
    drivers.add('d.csi', '/sock', '1.0.0');
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
});
