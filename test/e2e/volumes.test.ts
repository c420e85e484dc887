/**
 * Volumes end to end on the embedded process runtime (as root: each container gets a private
 * mount namespace with bind mounts): the real CLI joined to the fake apiserver runs the shared
 * volume cases (volume-cases.ts), plus what only this runtime does: mount points it had to create
 * on the host are removed with the last container using them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { describeVolumeCases } from './volume-cases.js';
import { until, unmountTestMounts } from './helpers.js';

const node = 'volume-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-volumes-'));
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ dir, node, config: ['syncFrequency: 2s'] });
  await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
}, 30_000);

afterAll(async () => {
  await c?.close();
  unmountTestMounts(dir);
  rmSync(dir, { recursive: true, force: true });
});

describeVolumeCases('volumes on the process runtime', () => ({ c, node, dir, image: 'busybox' }));

describe('process runtime mount points', () => {
  it('makes a missing mount point inside the container only: nothing is created on the host', async () => {
    const point = `/opt/tsk-mount-point-${process.pid}`;
    c.api.store.create(
      'pods',
      boundPod('mp', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', `echo here > ${point}/deep/f && exec sleep 3600`],
            volumeMounts: [{ name: 'e', mountPath: `${point}/deep` }],
          },
        ],
        volumes: [{ name: 'e', emptyDir: {} }],
      }),
    );
    await until(
      () => c.api.store.get('pods', 'default', 'mp')?.status?.containerStatuses?.[0]?.state?.running,
      20_000,
      'mp running',
    );
    expect(existsSync(point)).toBe(false);
    const uid = c.api.store.get('pods', 'default', 'mp')!.metadata.uid!;
    expect(readFileSync(join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'e', 'f'), 'utf8')).toBe(
      'here\n',
    );
    c.api.store.remove('pods', 'default', 'mp', {});
    await until(() => !existsSync(join(dir, 'root', 'pods', uid)), 20_000, "mp's directory removed");
    expect(existsSync(point)).toBe(false);
  }, 40_000);

  it("housekeeping removes an orphaned pod directory (unmounting its tmpfs) and never a known pod's", async () => {
    // Built aside and moved in whole: housekeeping (every 2 s) would otherwise remove the empty
    // directory before the tmpfs is on it.
    const staging = join(dir, 'root', 'staging-orphan-uid-1');
    const orphan = join(staging, 'volumes', 'kubernetes.io~empty-dir', 'm');
    mkdirSync(orphan, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', orphan]);
    writeFileSync(join(orphan, 'f'), 'x');
    mkdirSync(join(dir, 'root', 'pods'), { recursive: true });
    renameSync(staging, join(dir, 'root', 'pods', 'orphan-uid-1'));
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).toContain('pods/orphan-uid-1/volumes');
    const known = readdirSync(join(dir, 'root', 'pods')).filter((u) => u !== 'orphan-uid-1');
    await until(() => !existsSync(join(dir, 'root', 'pods', 'orphan-uid-1')), 20_000, 'orphan removed');
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain('orphan-uid-1');
    for (const u of known) expect(existsSync(join(dir, 'root', 'pods', u))).toBe(true);
  }, 30_000);
});
