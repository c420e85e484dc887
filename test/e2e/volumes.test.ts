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
import { httpGet, until, unmountTestMounts } from './helpers.js';

const node = 'volume-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-volumes-'));
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({
    dir,
    node,
    config: ['syncFrequency: 2s', 'featureGates: {ClusterTrustBundleProjection: true, PodCertificateRequest: true}'],
  });
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

describe('image volumes (ImageVolume: beta, on, in v1.36)', () => {
  it("pulls an image volume's image before any container (events on the pod), then asks the runtime to mount it; this runtime, with no image content, refuses and the container says why", async () => {
    const reference = 'registry.example/models:1';
    c.api.store.create(
      'pods',
      boundPod('imgvol', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'models', mountPath: '/models', subPath: 'llama' }],
          },
        ],
        volumes: [{ name: 'models', image: { reference, pullPolicy: 'IfNotPresent' } }],
      }),
    );
    const waiting = await until(
      () => c.api.store.get('pods', 'default', 'imgvol')?.status?.containerStatuses?.[0]?.state?.waiting,
      20_000,
      'imgvol waiting',
    );
    await until(
      () =>
        c.api.store.get('pods', 'default', 'imgvol')?.status?.containerStatuses?.[0]?.state?.waiting?.reason ===
        'CreateContainerError',
      20_000,
      `CreateContainerError (was ${waiting.reason})`,
    );
    const status = c.api.store.get('pods', 'default', 'imgvol')!.status.containerStatuses[0];
    expect(status.state.waiting.message).toContain(
      "image volume at /models: image volumes need a runtime with image content; the process runtime runs containers from the host's filesystem",
    );
    // The image's events name the pod, not a container (upstream's objectRef for image volumes).
    const events = c.api.store.list(
      'events',
      (e: Record<string, any>) => e.involvedObject?.name === 'imgvol' && e.reason === 'Pulled',
    ) as Record<string, any>[];
    const pulled = events.find((e) => String(e.message).includes(reference));
    expect(pulled?.message).toMatch(new RegExp(`^Container image "${reference}" already present on machine`));
    expect(pulled?.involvedObject.fieldPath).toBeUndefined();
    // Upstream's counters: the mount asked for, and failed with its container.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toMatch(/^kubelet_image_volume_requested_total [1-9]\d*$/m);
    expect(metrics).toMatch(/^kubelet_image_volume_mounted_errors_total [1-9]\d*$/m);
    expect(metrics).toContain('\nkubelet_image_volume_mounted_succeed_total 0\n');
  }, 40_000);
});
