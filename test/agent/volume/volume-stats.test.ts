import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskUsage, VolumeStatsCollector } from '../../../src/agent/volume/volume-stats.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { MountedVolume } from '../../../src/agent/volume/types.js';
import { hangFsAvailable, startHangFs } from '../../fixtures/hang-fs.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-vstats-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('volume stats', () => {
  it('measures emptyDir usage in the background and serves it from memory; hostPath is not measured', async () => {
    const ed = join(dir, 'ed');
    mkdirSync(join(ed, 'sub'), { recursive: true });
    const mounted = new Map<string, MountedVolume>([
      [
        'scratch',
        { path: ed, readOnly: false, plugin: 'kubernetes.io~empty-dir', metrics: 'du', localEphemeral: true },
      ],
      ['host', { path: '/usr', readOnly: false, plugin: 'kubernetes.io~host-path' }],
    ]);
    const c = new VolumeStatsCollector({
      volumes: { podsWithVolumes: () => ['u1'], mountedVolumes: () => mounted },
      clock: new FakeClock(Date.UTC(2026, 10, 23)),
      logger: createLogger({ level: 'fatal' }),
    });
    expect(c.get('u1')).toEqual([]);
    await c.collect();
    const before = c.get('u1');
    expect(before.map((s) => s.name)).toEqual(['scratch']);
    writeFileSync(join(ed, 'sub', 'blob'), Buffer.alloc(1 << 20, 1));
    expect(c.get('u1')).toEqual(before);
    await c.collect();
    const [after] = c.get('u1');
    expect(after.usedBytes - before[0].usedBytes).toBeGreaterThanOrEqual(1 << 20);
    expect(after.inodesUsed).toBe(before[0].inodesUsed + 1);
    expect(after).toMatchObject({
      time: '2026-11-23T00:00:00Z',
      capacityBytes: expect.any(Number),
      availableBytes: expect.any(Number),
      inodes: expect.any(Number),
      inodesFree: expect.any(Number),
    });
    expect(after.capacityBytes).toBeGreaterThan(0);
  });

  it("a local PV's claim: its filesystem's figures (statfs) with its pvcRef; claims() lists each claim once", async () => {
    const claim = { name: 'data', namespace: 'shop' };
    const pods: Record<string, Map<string, MountedVolume>> = {
      a: new Map([
        [
          'd',
          { path: dir, readOnly: false, plugin: 'kubernetes.io~persistent-volume', metrics: 'statfs', pvcRef: claim },
        ],
      ]),
      b: new Map([
        [
          'd2',
          { path: dir, readOnly: false, plugin: 'kubernetes.io~persistent-volume', metrics: 'statfs', pvcRef: claim },
        ],
      ]),
    };
    const c = new VolumeStatsCollector({
      volumes: { podsWithVolumes: () => Object.keys(pods), mountedVolumes: (uid) => pods[uid] },
      clock: new FakeClock(Date.UTC(2026, 10, 23)),
      logger: createLogger({ level: 'fatal' }),
    });
    await c.collect();
    const [a] = c.get('a');
    const fs = statfsSync(dir);
    expect(a).toMatchObject({
      name: 'd',
      pvcRef: claim,
      localEphemeral: false,
      capacityBytes: fs.blocks * fs.bsize,
      inodes: fs.files,
    });
    expect(a.inodesUsed).toBe(a.inodes - a.inodesFree);
    expect(a.usedBytes).toBeGreaterThan(0);
    expect(c.claims().map((x) => [x.pvcRef, x.name])).toEqual([[claim, 'd']]);
  });

  it('diskUsage counts hard links once', async () => {
    const d = join(dir, 'hl');
    mkdirSync(d);
    writeFileSync(join(d, 'a'), Buffer.alloc(8192, 1));
    const { linkSync } = await import('node:fs');
    linkSync(join(d, 'a'), join(d, 'b'));
    const u = await diskUsage(d);
    expect(u.inodes).toBe(2);
  });

  // Regression: the statfs of a local PV on a filesystem that does not answer held the collection (and a threadpool
  // thread) until it answered: no pod's volume figures were updated any more.
  it.runIf(hangFsAvailable)(
    'goes on past a local PV on a filesystem that does not answer',
    async () => {
      const hangFs = await startHangFs(join(dir, 'hang'));
      try {
        const volume = (path: string): MountedVolume => ({
          path,
          readOnly: false,
          plugin: 'kubernetes.io~persistent-volume',
          metrics: 'statfs',
        });
        const mounted = new Map([
          ['stuck', volume(join(hangFs.mountpoint, 'hang', 'pv'))],
          ['fine', volume(dir)],
        ]);
        const c = new VolumeStatsCollector({
          volumes: { podsWithVolumes: () => ['u1'], mountedVolumes: () => mounted },
          clock: new FakeClock(),
          logger: createLogger({ level: 'fatal' }),
        });
        await c.collect();
        expect(c.get('u1').map((s) => s.name)).toEqual(['fine']);
      } finally {
        hangFs.stop();
      }
    },
    30_000,
  );
});
