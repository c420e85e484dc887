/**
 * Volumes on real containers: a kubelet joined to the fake apiserver with containerd as its
 * runtime runs the shared volume cases (test/e2e/volume-cases.ts) — the volumes reach runc as CRI
 * Mounts (bind mounts, read-only, subPath resolved by the kubelet), and what the containers read
 * comes through them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { CriRuntime } from '../../src/cri/services.js';
import { TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import { until } from '../e2e/helpers.js';
import { describeVolumeCases } from '../e2e/volume-cases.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';
import { startFakeCsiDriver } from '../fixtures/fake-csi-driver.js';
import { createBoundClaim } from '../fixtures/apiserver/bound-claim.js';

const node = 'ctrd-volume-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-volumes-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;

beforeAll(
  async () =>
    ({ ctrd, cri, c } = await startContainerdCluster({
      dir,
      node,
      config: ['syncFrequency: 2s', 'featureGates: {ClusterTrustBundleProjection: true, PodCertificateRequest: true}'],
    })),
  60_000,
);
afterAll(() => stopContainerdCluster({ ctrd, cri, c, dir }), 90_000);

describeVolumeCases('volumes on containerd', () => ({ c, node, dir, image: TEST_IMAGES.busybox }));

describe('CRI mounts on containerd', () => {
  it('passes volume mounts before /etc/hosts and the termination log, read-only where asked, with propagation and SELinux relabelling (not a hostPath)', async () => {
    c.api.store.create(
      'pods',
      boundPod('order', node, {
        // An SELinux label is passed on (this host enforces none, so containerd only accepts it).
        securityContext: { seLinuxOptions: { level: 's0:c1,c2' } },
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            command: ['sleep', '3600'],
            terminationMessagePath: '/dev/termination-log',
            volumeMounts: [
              { name: 'e', mountPath: '/e', readOnly: true, mountPropagation: 'HostToContainer' },
              { name: 'h', mountPath: '/h' },
            ],
          },
        ],
        volumes: [
          { name: 'e', emptyDir: {} },
          { name: 'h', hostPath: { path: dir } },
        ],
      }),
    );
    const uid = await until(
      () =>
        c.api.store.get('pods', 'default', 'order')?.status?.containerStatuses?.[0]?.state?.running &&
        c.api.store.get('pods', 'default', 'order')!.metadata.uid,
      40_000,
      'order running',
    ).catch((e) => {
      throw new Error(
        `${e.message}: ${JSON.stringify(c.api.store.get('pods', 'default', 'order')?.status?.containerStatuses)}`,
      );
    });
    const [ctr] = await cri.runtime.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } });
    const mounts = (await cri.runtime.containerStatus(ctr.id)).status.mounts ?? [];
    expect(mounts.map((m) => m.container_path)).toEqual(['/e', '/h', '/etc/hosts', '/dev/termination-log']);
    expect(mounts[0]).toMatchObject({
      host_path: join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'e'),
      readonly: true,
      propagation: 'PROPAGATION_HOST_TO_CONTAINER',
      selinux_relabel: true,
    });
    expect(mounts[1]).toMatchObject({ host_path: dir, selinux_relabel: false });
  }, 60_000);
});

/** A CSIDriver without an attach step (as csi-driver-host-path's), a PV of `driver` and its bound claim. */
function csiClaim(
  driver: string,
  o: { pv: string; claim: string; handle: string; storage: string; block?: boolean },
): void {
  const store = c.api.store;
  const mode = o.block ? { volumeMode: 'Block' } : {};
  if (!store.get('storage.k8s.io/csidrivers', '', driver))
    store.create('storage.k8s.io/csidrivers', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: driver },
      spec: { attachRequired: false },
    });
  createBoundClaim(store, {
    volume: {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: o.pv },
      spec: {
        capacity: { storage: o.storage },
        accessModes: ['ReadWriteOnce'],
        ...mode,
        csi: { driver, volumeHandle: o.handle },
      },
    },
    claim: {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: o.claim, namespace: 'default' },
      spec: { ...mode, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: o.storage } } },
    },
  });
}

/** The UID of pod `name` once its container runs (its status in the error otherwise). */
function runningUid(name: string): Promise<string> {
  const store = c.api.store;
  const running = () =>
    store.get('pods', 'default', name)?.status?.containerStatuses?.[0]?.state?.running &&
    store.get('pods', 'default', name)!.metadata.uid;
  return until(running, 40_000, `${name} running`).catch((e: Error) => {
    throw new Error(`${e.message}: ${JSON.stringify(store.get('pods', 'default', name)?.status)}`);
  });
}

describe('CSI volumes on containerd', () => {
  it('a PVC on a CSI PersistentVolume: the driver registers, stages and publishes; runc bind-mounts the published target; deleting the pod unpublishes and unstages', async () => {
    const backing = join(dir, 'csi-backing');
    const driver = await startFakeCsiDriver({ root: join(dir, 'root'), backing });
    try {
      await until(() => driver.statuses.length, 20_000, 'driver registered');
      expect(driver.statuses[0].plugin_registered).toBe(true);
      mkdirSync(join(backing, 'ctrd-vol'), { recursive: true });
      writeFileSync(join(backing, 'ctrd-vol', 'in'), 'csi-data');
      const store = c.api.store;
      csiClaim(driver.name, { pv: 'pv-ctrd-csi', claim: 'ctrd-claim', handle: 'ctrd-vol', storage: '1Gi' });
      store.create(
        'pods',
        boundPod('ctrd-csi', node, {
          containers: [
            {
              name: 'main',
              image: TEST_IMAGES.busybox,
              command: ['sh', '-c', 'cat /data/in > /data/out; sleep 3600'],
              volumeMounts: [{ name: 'd', mountPath: '/data' }],
            },
          ],
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'ctrd-claim' } }],
        }),
      );
      const uid = await runningUid('ctrd-csi');
      await until(() => existsSync(join(backing, 'ctrd-vol', 'out')), 10_000, 'written through the container');
      expect(readFileSync(join(backing, 'ctrd-vol', 'out'), 'utf8')).toBe('csi-data');
      const [ctr] = await cri.runtime.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } });
      const mounts = (await cri.runtime.containerStatus(ctr.id)).status.mounts ?? [];
      expect(mounts.find((m) => m.container_path === '/data')?.host_path).toBe(
        join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~csi', 'pv-ctrd-csi', 'mount'),
      );
      store.remove('pods', 'default', 'ctrd-csi', {});
      await until(() => driver.calls.some((x) => x.method === 'NodeUnstageVolume'), 40_000, 'unstaged');
      expect(
        driver.calls
          .filter((x) => x.method.startsWith('Node') && x.method.includes('Volume') && !x.method.includes('Stats'))
          .map((x) => x.method),
      ).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
    } finally {
      await driver.close();
    }
  }, 90_000);

  it('a raw block CSI PV (volumeMode: Block): staged, published as a device file, bound into the pod and passed to runc as a device the container writes', async () => {
    const backing = join(dir, 'csi-block-backing');
    const driver = await startFakeCsiDriver({ root: join(dir, 'root'), backing, name: 'block.csi.k8s.io' });
    const store = c.api.store;
    try {
      await until(() => driver.statuses.length, 20_000, 'driver registered');
      csiClaim(driver.name, { pv: 'pv-block', claim: 'block-claim', handle: 'blk-1', storage: '4Mi', block: true });
      store.create(
        'pods',
        boundPod('ctrd-block', node, {
          containers: [
            {
              name: 'main',
              image: TEST_IMAGES.busybox,
              command: [
                'sh',
                '-c',
                'printf raw-block-data | dd of=/dev/xvda conv=notrunc 2>/dev/null && sync; sleep 3600',
              ],
              volumeDevices: [{ name: 'd', devicePath: '/dev/xvda' }],
            },
          ],
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'block-claim' } }],
        }),
      );
      const uid = await runningUid('ctrd-block');
      await until(
        () => readFileSync(join(backing, 'blk-1.img')).subarray(0, 14).toString() === 'raw-block-data',
        20_000,
        'written through the device',
      );
      const base = join(dir, 'root', 'plugins', 'kubernetes.io', 'csi', 'volumeDevices');
      const [stage] = driver.calls.filter((x) => x.method === 'NodeStageVolume').map((x) => x.req);
      const [publish] = driver.calls.filter((x) => x.method === 'NodePublishVolume').map((x) => x.req);
      expect(stage).toMatchObject({
        staging_target_path: join(base, 'staging', 'pv-block'),
        volume_capability: { block: {}, access_type: 'block' },
      });
      expect(publish).toMatchObject({
        target_path: join(base, 'publish', 'pv-block', uid),
        volume_capability: { block: {} },
      });
      // The pod's device file: a bind mount of the published device, under upstream's path.
      const podDevice = join(dir, 'root', 'pods', uid, 'volumeDevices', 'kubernetes.io~csi', 'pv-block');
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).toContain(` ${podDevice} `);
      // Upstream's two events of the mapped device.
      expect(
        store
          .list('events', (e: Record<string, any>) => e.involvedObject?.name === 'ctrd-block')
          .filter((e) => e.reason === 'SuccessfulMountVolume')
          .map((e) => e.message),
      ).toEqual([
        `MapVolume.MapPodDevice succeeded for volume "pv-block" globalMapPath "${join(base, 'pv-block', 'dev')}"`,
        `MapVolume.MapPodDevice succeeded for volume "pv-block" volumeMapPath "${dirname(podDevice)}"`,
      ]);
      store.remove('pods', 'default', 'ctrd-block', {});
      await until(() => driver.calls.some((x) => x.method === 'NodeUnstageVolume'), 40_000, 'unstaged');
      expect(
        driver.calls
          .filter((x) =>
            ['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume'].includes(x.method),
          )
          .map((x) => x.method),
      ).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
      await until(
        () => !readFileSync('/proc/self/mountinfo', 'utf8').includes(join(dir, 'root', 'plugins')),
        10_000,
        'no mounts left under plugins',
      );
      await until(
        () => !existsSync(join(base, 'pv-block')) && !existsSync(join(base, 'staging', 'pv-block')),
        10_000,
        'block directories removed',
      );
    } finally {
      await driver.close();
    }
  }, 90_000);
});

describe('image volumes on containerd', () => {
  it('an image volume whose image is absent with pull policy Never: no container is tried, the pod is told why', async () => {
    c.api.store.create(
      'pods',
      boundPod('imgvol-never', node, {
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'models', mountPath: '/models' }],
          },
        ],
        volumes: [{ name: 'models', image: { reference: 'registry.invalid/absent:1', pullPolicy: 'Never' } }],
      }),
    );
    const event = await until(
      () =>
        c.api.store.list(
          'events',
          (e: Record<string, any>) => e.involvedObject?.name === 'imgvol-never' && e.reason === 'ErrImageNeverPull',
        )[0] as Record<string, any> | undefined,
      20_000,
      'ErrImageNeverPull',
    );
    expect(event.message).toBe('Container image "registry.invalid/absent:1" is not present with pull policy of Never');
    // On the pod, as upstream's objectRef for image volumes: no container's field path.
    expect(event.involvedObject.fieldPath).toBeUndefined();
    const pod = c.api.store.get('pods', 'default', 'imgvol-never')!;
    expect(pod.status.containerStatuses[0].state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(
      (await cri.runtime.listContainers()).some((x) => x.labels['io.kubernetes.pod.name'] === 'imgvol-never'),
    ).toBe(false);
  }, 30_000);

  it("a present image is asked of containerd as an image mount (CRI Mount.image); containerd 1.x has no image volumes and the container shows the runtime's answer", async () => {
    c.api.store.create(
      'pods',
      boundPod('imgvol-present', node, {
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'tools', mountPath: '/tools' }],
          },
        ],
        volumes: [{ name: 'tools', image: { reference: TEST_IMAGES.busybox, pullPolicy: 'IfNotPresent' } }],
      }),
    );
    const state = await until(
      () => {
        const s = c.api.store.get('pods', 'default', 'imgvol-present')?.status?.containerStatuses?.[0]?.state;
        return s?.running || (s?.waiting && s.waiting.reason !== 'ContainerCreating') ? s : undefined;
      },
      30_000,
      'imgvol-present started or refused',
    );
    // containerd 1.6 does not know Mount.image: it takes the empty host path (a Go kubelet gets the same answer there).
    expect(state.waiting?.reason).toBe('CreateContainerError');
    expect(state.waiting?.message).toContain('failed to mkdir ""');
  }, 40_000);
});

describe('env on containerd', () => {
  it("a Secret's value that is not UTF-8: the container starts, with the value as containerd hands it to runc", async () => {
    const binary = Buffer.from([0xff, 0xfe, 0x41]);
    c.api.store.create('secrets', {
      metadata: { name: 'binary-env', namespace: 'default' },
      data: { raw: binary.toString('base64') },
    });
    c.api.store.create(
      'pods',
      boundPod('binary-env', node, {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            command: ['sh', '-c', 'printf %s "$RAW" | od -An -tx1 > /dev/termination-log 2>&1'],
            terminationMessagePath: '/dev/termination-log',
            env: [{ name: 'RAW', valueFrom: { secretKeyRef: { name: 'binary-env', key: 'raw' } } }],
          },
        ],
      }),
    );
    const terminated = await until(
      () =>
        c.api.store.get('pods', 'default', 'binary-env')?.status?.containerStatuses?.[0]?.state?.terminated as
          { exitCode: number; message?: string } | undefined,
      40_000,
      'the container ended',
    );
    // The kubelet sends the bytes as they are (KeyValue.value is bytes, test/cri/client.test.ts); containerd writes
    // them into the OCI spec's JSON, where each byte that is not UTF-8 becomes U+FFFD (ef bf bd), as for the Go
    // kubelet.
    expect({ exitCode: terminated.exitCode, bytes: terminated.message?.trim().split(/\s+/) }).toEqual({
      exitCode: 0,
      bytes: ['ef', 'bf', 'bd', 'ef', 'bf', 'bd', '41'],
    });
  }, 60_000);
});
