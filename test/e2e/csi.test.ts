/**
 * CSI end to end: the real CLI joined to the fake apiserver, on the embedded process runtime (as
 * root), with a CSI node plugin served by grpc-js (test/fixtures/fake-csi-driver.ts) the way a
 * driver and its node-driver-registrar serve one: registration through plugins_registry (CSINode,
 * the Node's annotation and labels), PVCs on CSI PersistentVolumes (VolumeAttachment wait,
 * NodeStage, NodePublish, secrets, pod info, fsType and mount options, volume stats from
 * NodeGetVolumeStats), inline and generic ephemeral volumes, teardown (NodeUnpublish, then
 * NodeUnstage), refusals with upstream's messages, and deregistration when the socket goes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { httpGet, unmountTestMounts, until } from './helpers.js';
import { startFakeCsiDriver, type FakeCsiDriver } from '../fixtures/fake-csi-driver.js';
import { createBoundClaim } from '../fixtures/apiserver/bound-claim.js';

type Obj = Record<string, any>;
const node = 'csi-node';
const DRIVER = 'fake.csi.k8s.io';
const dir = mkdtempSync(join(tmpdir(), 'tsk-csi-'));
const root = join(dir, 'root');
const backing = join(dir, 'backing');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
let c: Cluster;
let driver: FakeCsiDriver;

const store = () => c.api.store;
const pod = (name: string) => store().get('pods', 'default', name) as Obj | undefined;
const running = (name: string) => pod(name)?.status?.containerStatuses?.[0]?.state?.running;
const events = (name: string) => store().list('events', (e: Obj) => e.involvedObject?.name === name) as Obj[];
const failedMount = (name: string, text: string) =>
  until(
    () => events(name).find((e) => e.reason === 'FailedMount' && String(e.message).includes(text)),
    20_000,
    `FailedMount of ${name}: ${text}`,
  );
const calls = (method: string) => driver.calls.filter((x) => x.method === method).map((x) => x.req);
const logOf = (name: string) => {
  const uid = pod(name)?.metadata?.uid;
  const f = join(dir, 'logs', `default_${name}_${uid}`, 'main', '0.log');
  return existsSync(f) ? readFileSync(f, 'utf8') : '';
};
const mountsUnder = (p: string) =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[4]?.startsWith(p));
const csiDriverObj = (modes: string[]) => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'CSIDriver',
  metadata: { name: DRIVER },
  spec: { attachRequired: true, podInfoOnMount: true, volumeLifecycleModes: modes, fsGroupPolicy: 'File' },
});
const pv = (name: string, handle: string, extra: Obj = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
    mountOptions: ['noatime'],
    csi: { driver: DRIVER, volumeHandle: handle, fsType: 'ext4', volumeAttributes: { tier: 'gold' }, ...extra },
  },
});
const pvc = (name: string, volumeName: string, meta: Obj = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'default', ...meta },
  spec: { volumeName, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  status: { phase: 'Bound' },
});
const attach = (handle: string, metadata: Record<string, string> = {}) => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'VolumeAttachment',
  metadata: { name: `csi-${sha(`${handle}${DRIVER}${node}`)}` },
  spec: { attacher: DRIVER, nodeName: node, source: {} },
  status: { attached: true, attachmentMetadata: metadata },
});
const volPod = (name: string, volume: Obj, command = 'sleep 3600') =>
  boundPod(name, node, {
    securityContext: { fsGroup: 2345 },
    containers: [
      {
        name: 'main',
        image: 'busybox',
        command: ['sh', '-c', command],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      },
    ],
    volumes: [{ name: 'data', ...volume }],
  });

/** A pod on a claim of its own, bound to a CSI PV `pv-<name>` of volume `handle`, attached. */
const errorPod = (name: string, handle: string) => {
  createBoundClaim(store(), { volume: pv(`pv-${name}`, handle), claim: pvc(`claim-${name}`, `pv-${name}`) });
  store().create('storage.k8s.io/volumeattachments', attach(handle));
  store().create('pods', volPod(name, { persistentVolumeClaim: { claimName: `claim-${name}` } }));
};
/** The driver's calls of `method` for volume `handle`. */
const of = (method: string, handle: string) => calls(method).filter((r) => r.volume_id === handle);
/** Where volume `handle` is staged (its record and globalmount). */
const stageDir = (handle: string) => join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha(handle));

beforeAll(async () => {
  c = await startCluster({
    dir,
    node,
    config: ['volumeStatsAggPeriod: 1s', 'nodeStatusUpdateFrequency: 1s', 'syncFrequency: 2s'],
  });
  await until(() => store().get('nodes', '', node), 20_000, 'node registered');
  driver = await startFakeCsiDriver({
    root,
    backing,
    nodeId: 'fake-node-7',
    topology: { 'topology.fake.csi/zone': 'z1' },
    maxVolumes: 7,
    capabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME'],
  });
}, 30_000);

afterAll(async () => {
  await c?.close();
  await driver?.close();
  unmountTestMounts(dir);
  rmSync(dir, { recursive: true, force: true });
});

describe('CSI drivers on the process runtime', () => {
  it('registers a driver from plugins_registry: NotifyRegistrationStatus, the CSINode entry, the Node annotation and topology label', async () => {
    await until(() => driver.statuses.length, 20_000, 'registration status');
    expect(driver.statuses[0]).toEqual({ plugin_registered: true, error: '' });
    const csiNode = await until(
      () =>
        (store().get('storage.k8s.io/csinodes', '', node) as Obj)?.spec?.drivers?.length &&
        store().get('storage.k8s.io/csinodes', '', node),
      20_000,
      'CSINode',
    );
    expect(csiNode.spec.drivers).toEqual([
      { name: DRIVER, nodeID: 'fake-node-7', topologyKeys: ['topology.fake.csi/zone'], allocatable: { count: 7 } },
    ]);
    expect(csiNode.metadata.annotations).toEqual({
      'storage.alpha.kubernetes.io/migrated-plugins':
        'kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume',
    });
    expect(csiNode.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: node, uid: (store().get('nodes', '', node) as Obj).metadata.uid },
    ]);
    const n = store().get('nodes', '', node) as Obj;
    expect(JSON.parse(n.metadata.annotations['csi.volume.kubernetes.io/nodeid'])).toEqual({ [DRIVER]: 'fake-node-7' });
    expect(n.metadata.labels['topology.fake.csi/zone']).toBe('z1');
    // The plugin manager's count, as upstream's collector: the socket found and registered.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    for (const state of ['actual_state_of_world', 'desired_state_of_world'])
      expect(metrics).toContain(
        `plugin_manager_total_plugins{socket_path="${driver.registrationSocket}",state="${state}"} 1`,
      );
  }, 30_000);

  it("a CSIDriver's nodeAllocatableUpdatePeriodSeconds keeps its CSINode volume limit current (MutableCSINodeAllocatableCount)", async () => {
    const name = 'limits.csi.k8s.io';
    store().create('storage.k8s.io/csidrivers', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name },
      spec: { attachRequired: false, nodeAllocatableUpdatePeriodSeconds: 10 },
    });
    // NodeGetInfo reads the options at each call: the limit the driver reports changes with them.
    const options = { root, backing, name, maxVolumes: 3 };
    const limits = await startFakeCsiDriver(options);
    const entry = () =>
      ((store().get('storage.k8s.io/csinodes', '', node) as Obj)?.spec?.drivers ?? []).find(
        (d: Obj) => d.name === name,
      );
    try {
      await until(() => entry()?.allocatable?.count === 3, 20_000, 'registered with 3');
      options.maxVolumes = 5;
      await until(() => entry()?.allocatable?.count === 5, 25_000, 'updated to 5');
    } finally {
      await limits.close();
      store().remove('storage.k8s.io/csidrivers', '', name, {});
    }
    await until(() => !entry(), 20_000, 'uninstalled');
  }, 60_000);

  it('a PVC on a CSI PV waits for its VolumeAttachment, then is staged and published; the container reads and writes it', async () => {
    mkdirSync(join(backing, 'vol-1'), { recursive: true });
    writeFileSync(join(backing, 'vol-1', 'in'), 'from-the-driver');
    store().create('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'csi-creds', namespace: 'default' },
      data: { password: Buffer.from('s3cret').toString('base64') },
    });
    store().create('storage.k8s.io/csidrivers', csiDriverObj(['Persistent']));
    createBoundClaim(store(), {
      volume: pv('pv-csi', 'vol-1', {
        nodePublishSecretRef: { name: 'csi-creds', namespace: 'default' },
        nodeStageSecretRef: { name: 'csi-creds', namespace: 'default' },
      }),
      claim: pvc('claim-csi', 'pv-csi'),
    });
    store().create(
      'pods',
      volPod(
        'csi-pvc',
        { persistentVolumeClaim: { claimName: 'claim-csi' } },
        'cat /data/in; echo; echo written > /data/out; sleep 3600',
      ),
    );
    const attachId = `csi-${sha(`vol-1${DRIVER}${node}`)}`;
    await failedMount(
      'csi-pvc',
      `MountVolume.WaitForAttach failed for volume "pv-csi" : volume vol-1 has GET error for volume attachment ${attachId}: volumeattachments.storage.k8s.io "${attachId}" not found`,
    );
    expect(calls('NodePublishVolume')).toHaveLength(0);
    store().create('storage.k8s.io/volumeattachments', attach('vol-1', { devicePath: '/dev/fake1' }));
    await until(() => running('csi-pvc'), 30_000, 'csi-pvc running');
    await until(() => logOf('csi-pvc').includes('from-the-driver'), 10_000, 'volume read');
    await until(() => existsSync(join(backing, 'vol-1', 'out')), 10_000, 'volume written');

    const uid = pod('csi-pvc')!.metadata.uid;
    const staging = join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha('vol-1'), 'globalmount');
    const target = join(root, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'pv-csi', 'mount');
    const capability = {
      mount: { fs_type: 'ext4', mount_flags: ['noatime'], volume_mount_group: '' },
      access_mode: { mode: 'SINGLE_NODE_WRITER' },
      access_type: 'mount',
    };
    expect(calls('NodeStageVolume')).toEqual([
      {
        volume_id: 'vol-1',
        publish_context: { devicePath: '/dev/fake1' },
        staging_target_path: staging,
        volume_capability: capability,
        secrets: { password: 's3cret' },
        volume_context: { tier: 'gold' },
      },
    ]);
    const [publish] = calls('NodePublishVolume');
    expect(publish).toEqual({
      volume_id: 'vol-1',
      publish_context: { devicePath: '/dev/fake1' },
      staging_target_path: staging,
      target_path: target,
      volume_capability: capability,
      readonly: false,
      secrets: { password: 's3cret' },
      volume_context: {
        tier: 'gold',
        'csi.storage.k8s.io/pod.name': 'csi-pvc',
        'csi.storage.k8s.io/pod.namespace': 'default',
        'csi.storage.k8s.io/pod.uid': uid,
        'csi.storage.k8s.io/serviceAccount.name': 'default',
        'csi.storage.k8s.io/ephemeral': 'false',
      },
    });
    expect(JSON.parse(readFileSync(join(target, '..', 'vol_data.json'), 'utf8'))).toMatchObject({
      specVolID: 'pv-csi',
      volumeHandle: 'vol-1',
      driverName: DRIVER,
      nodeName: node,
      attachmentID: attachId,
      volumeLifecycleMode: 'Persistent',
    });
    // The attachable volume is reported in use, so the attach/detach controller keeps it attached.
    await until(
      () =>
        ((store().get('nodes', '', node) as Obj).status?.volumesInUse ?? []).includes(
          `kubernetes.io/csi/${DRIVER}^vol-1`,
        ),
      20_000,
      'volumesInUse',
    );
    // fsGroupPolicy File: the kubelet applied the pod's fsGroup to the published volume.
    await until(() => readFileSync('/proc/self/mountinfo', 'utf8').includes(target), 5000, 'target mounted');
    const { statSync } = await import('node:fs');
    expect(statSync(join(backing, 'vol-1', 'in')).gid).toBe(2345);
  }, 60_000);

  it("reports the volume's figures from NodeGetVolumeStats in /stats/summary and kubelet_volume_stats_*", async () => {
    const summary = await until(
      async () => {
        const s = JSON.parse((await httpGet(`http://127.0.0.1:${c.ports.ro}/stats/summary`)).body) as Obj;
        const p = s.pods.find((x: Obj) => x.podRef.name === 'csi-pvc');
        return p?.volume?.find((v: Obj) => v.name === 'data') as Obj | undefined;
      },
      20_000,
      'volume stats',
    );
    expect(summary.pvcRef).toEqual({ name: 'claim-csi', namespace: 'default' });
    expect(summary.capacityBytes).toBeGreaterThan(0);
    expect(summary.inodes).toBeGreaterThan(0);
    expect(calls('NodeGetVolumeStats')[0]).toMatchObject({
      volume_id: 'vol-1',
      volume_path: expect.stringContaining('kubernetes.io~csi/pv-csi/mount'),
    });
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    const sample = (name: string, labels: string) =>
      metrics
        .split('\n')
        .find((l) => l.startsWith(`${name}{${labels}} `))
        ?.split(' ')
        .pop();
    // upstream's CSI client metrics interceptor: every call, by full method and grpc-go code name (labels sorted, as
    // client_golang writes them).
    const ok = `driver_name="${DRIVER}",grpc_status_code="OK",method_name="/csi.v1.Node/NodePublishVolume",migrated="false"`;
    expect(Number(sample('csi_operations_seconds_count', ok))).toBeGreaterThanOrEqual(1);
    // Storage metrics name a CSI volume's plugin with its driver (upstream GetFullQualifiedPluginNameForVolume).
    expect(
      Number(
        sample(
          'volume_manager_total_volumes',
          `plugin_name="kubernetes.io/csi:${DRIVER}",state="actual_state_of_world"`,
        ),
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      Number(
        sample(
          'storage_operation_duration_seconds_count',
          `migrated="false",operation_name="volume_mount",status="success",volume_plugin="kubernetes.io/csi:${DRIVER}"`,
        ),
      ),
    ).toBeGreaterThanOrEqual(1);
    // Upstream's buckets, the one call in the last (how long it took is the machine's: a loaded one passes 0.1 s).
    const getInfoBucket = (le: string) =>
      sample(
        'csi_operations_seconds_bucket',
        `driver_name="${DRIVER}",grpc_status_code="OK",le="${le}",method_name="/csi.v1.Node/NodeGetInfo",migrated="false"`,
      );
    expect(getInfoBucket('0.1')).toMatch(/^[01]$/);
    expect(getInfoBucket('+Inf')).toBe('1');
    expect(metrics).toMatch(
      new RegExp(
        `^kubelet_volume_stats_capacity_bytes\\{namespace="default",persistentvolumeclaim="claim-csi"\\} ${summary.capacityBytes}$`,
        'm',
      ),
    );
  }, 30_000);

  it('expands a published volume online once the controller has grown it: NodeExpandVolume, then the claim status and events, once', async () => {
    expect(calls('NodeExpandVolume')).toEqual([]);
    const pvNow = structuredClone(store().get('persistentvolumes', '', 'pv-csi') as Obj);
    pvNow.spec.capacity.storage = '2Gi';
    store().update('persistentvolumes', pvNow);
    const claim = structuredClone(store().get('persistentvolumeclaims', 'default', 'claim-csi') as Obj);
    claim.status = {
      phase: 'Bound',
      capacity: { storage: '1Gi' },
      allocatedResourceStatuses: { storage: 'NodeResizePending' },
      conditions: [{ type: 'FileSystemResizePending', status: 'True' }],
    };
    store().update('persistentvolumeclaims', claim);
    const [expand] = await until(
      () => calls('NodeExpandVolume').length && calls('NodeExpandVolume'),
      20_000,
      'NodeExpandVolume',
    );
    const uid = pod('csi-pvc')!.metadata.uid;
    expect(expand).toMatchObject({
      volume_id: 'vol-1',
      volume_path: join(root, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'pv-csi', 'mount'),
      capacity_range: { required_bytes: 2 * 1024 ** 3, limit_bytes: 0 },
      staging_target_path: join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha('vol-1'), 'globalmount'),
      volume_capability: { access_mode: { mode: 'SINGLE_NODE_WRITER' } },
    });
    const st = await until(
      () => {
        const s = (store().get('persistentvolumeclaims', 'default', 'claim-csi') as Obj).status;
        return s.capacity.storage === '2Gi' && s;
      },
      10_000,
      'claim status capacity',
    );
    expect(st.conditions).toEqual([]);
    expect(st.allocatedResourceStatuses).toBeUndefined();
    const text = `MountVolume.NodeExpandVolume succeeded for volume "pv-csi" ${node}`;
    await until(
      () => events('csi-pvc').some((e) => e.reason === 'FileSystemResizeSuccessful' && e.message === text),
      10_000,
      'pod event',
    );
    await until(
      () =>
        events('claim-csi').some(
          (e) => e.reason === 'FileSystemResizeSuccessful' && e.involvedObject.kind === 'PersistentVolumeClaim',
        ),
      10_000,
      'claim event',
    );
    await new Promise((r) => setTimeout(r, 4500)); // later syncs: nothing left to expand
    expect(calls('NodeExpandVolume')).toHaveLength(1);
  }, 40_000);

  it('marks the claim as upstream (RecoverVolumeExpansionFailure): a failed expansion is a NodeResizeError, retried; an infeasible one is not; none without the node’s turn', async () => {
    const grow = (storage: string, allocated?: string) => {
      const pvNow = structuredClone(store().get('persistentvolumes', '', 'pv-csi') as Obj);
      pvNow.spec.capacity.storage = storage;
      store().update('persistentvolumes', pvNow);
      const claim = structuredClone(store().get('persistentvolumeclaims', 'default', 'claim-csi') as Obj);
      claim.status = { ...claim.status, ...(allocated ? { allocatedResourceStatuses: { storage: allocated } } : {}) };
      store().update('persistentvolumeclaims', claim);
    };
    const claimStatus = () => (store().get('persistentvolumeclaims', 'default', 'claim-csi') as Obj).status;
    const before = calls('NodeExpandVolume').length;
    // An older resizer that gives the node no turn: nothing happens (upstream's runPreCheck).
    grow('3Gi');
    await new Promise((r) => setTimeout(r, 4500));
    expect(calls('NodeExpandVolume')).toHaveLength(before);
    // A failure the driver may recover from: a NodeResizeError condition, the claim stays NodeResizeInProgress, and the
    // next sync succeeds.
    driver.fail('NodeExpandVolume', 13 /* INTERNAL */, 1);
    grow('3Gi', 'NodeResizePending');
    const failed = await until(
      () => claimStatus().conditions?.find((c: Obj) => c.type === 'NodeResizeError') && claimStatus(),
      20_000,
      'NodeResizeError',
    );
    expect(failed.allocatedResourceStatuses).toEqual({ storage: 'NodeResizeInProgress' });
    expect(failed.conditions.find((c: Obj) => c.type === 'NodeResizeError')).toMatchObject({
      status: 'True',
      message:
        'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = injected INTERNAL for NodeExpandVolume',
    });
    await until(
      () => events('csi-pvc').some((e) => e.reason === 'FileSystemResizeFailed'),
      10_000,
      'FileSystemResizeFailed',
    );
    const done = await until(
      () => claimStatus().capacity.storage === '3Gi' && claimStatus(),
      20_000,
      'retried expansion',
    );
    expect(done.allocatedResourceStatuses).toBeUndefined();
    expect(done.conditions).toEqual([]);
    // An infeasible one: NodeResizeInfeasible, and the node does not try again.
    driver.fail('NodeExpandVolume', 3 /* INVALID_ARGUMENT */);
    grow('4Gi', 'NodeResizePending');
    const infeasible = await until(
      () => claimStatus().allocatedResourceStatuses?.storage === 'NodeResizeInfeasible' && claimStatus(),
      20_000,
      'infeasible',
    );
    expect(infeasible.conditions.find((c: Obj) => c.type === 'NodeResizeError')?.message).toBe(
      'failed to expand pvc with Expander.NodeExpand failed to expand the volume rpc error: code = InvalidArgument desc = injected INVALID_ARGUMENT for NodeExpandVolume',
    );
    const tried = calls('NodeExpandVolume').length;
    await new Promise((r) => setTimeout(r, 4500));
    expect(calls('NodeExpandVolume')).toHaveLength(tried);
    expect(claimStatus().capacity.storage).toBe('3Gi');
    driver.fail('NodeExpandVolume', 0, 0);
  }, 90_000);

  it('inline CSI volumes need the Ephemeral lifecycle mode in the CSIDriver; then they are published without staging', async () => {
    store().create(
      'pods',
      volPod(
        'csi-inline',
        { csi: { driver: DRIVER, volumeAttributes: { size: '1Mi' } } },
        'echo inline > /data/f; sleep 3600',
      ),
    );
    await failedMount(
      'csi-inline',
      `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ${DRIVER} (only supports ["Persistent"])`,
    );
    const cur = structuredClone(store().get('storage.k8s.io/csidrivers', '', DRIVER) as Obj);
    cur.spec.volumeLifecycleModes = ['Persistent', 'Ephemeral'];
    store().update('storage.k8s.io/csidrivers', cur);
    await until(() => running('csi-inline'), 40_000, 'csi-inline running');
    const uid = pod('csi-inline')!.metadata.uid;
    const handle = `csi-${sha(`${uid}data`)}`;
    await until(() => existsSync(join(backing, handle, 'f')), 10_000, 'inline volume written');
    const publish = calls('NodePublishVolume').find((r) => r.volume_id === handle);
    expect(publish).toMatchObject({
      staging_target_path: '',
      target_path: join(root, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'data', 'mount'),
      volume_capability: { access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      volume_context: {
        size: '1Mi',
        'csi.storage.k8s.io/ephemeral': 'true',
        'csi.storage.k8s.io/pod.name': 'csi-inline',
      },
    });
    expect(calls('NodeStageVolume').some((r) => r.volume_id === handle)).toBe(false);
  }, 60_000);

  it("tokenRequests give the driver the pod's service-account tokens (in its secrets when it asks); requiresRepublish publishes again on later syncs", async () => {
    const cur = structuredClone(store().get('storage.k8s.io/csidrivers', '', DRIVER) as Obj);
    cur.spec.tokenRequests = [{ audience: 'vault', expirationSeconds: 600 }, { audience: '' }];
    cur.spec.requiresRepublish = true;
    store().update('storage.k8s.io/csidrivers', cur);
    await new Promise((r) => setTimeout(r, 5500)); // the kubelet's object cache (5 s)
    store().create('pods', volPod('csi-token', { csi: { driver: DRIVER } }));
    await until(() => running('csi-token'), 40_000, 'csi-token running');
    const uid = pod('csi-token')!.metadata.uid;
    const handle = `csi-${sha(`${uid}data`)}`;
    const publishes = () => calls('NodePublishVolume').filter((r) => r.volume_id === handle);
    const tokens = JSON.parse(publishes()[0].volume_context['csi.storage.k8s.io/serviceAccount.tokens']) as Obj;
    expect(Object.keys(tokens)).toEqual(['', 'vault']);
    const issued = c.api.issuedTokens.find((t: Obj) => t.token === tokens.vault.token) as Obj;
    expect(issued).toMatchObject({
      audiences: ['vault'],
      expirationSeconds: 600,
      boundObjectRef: { kind: 'Pod', name: 'csi-token', uid },
    });
    expect(tokens.vault.expirationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(c.api.issuedTokens.find((t: Obj) => t.token === tokens[''].token)).toMatchObject({
      audiences: ['https://kubernetes.default.svc'],
      expirationSeconds: 3600,
    }); // the apiserver's audience when none is asked for;
    await until(() => publishes().length >= 2, 20_000, 'republished on a later sync');
    store().remove('pods', 'default', 'csi-token', {});
    // serviceAccountTokenInSecrets (CSIServiceAccountTokenSecrets): the tokens move to the secrets, out of the context.
    const inSecrets = structuredClone(store().get('storage.k8s.io/csidrivers', '', DRIVER) as Obj);
    inSecrets.spec.serviceAccountTokenInSecrets = true;
    store().update('storage.k8s.io/csidrivers', inSecrets);
    await new Promise((r) => setTimeout(r, 5500)); // the kubelet's object cache (5 s)
    store().create('pods', volPod('csi-token-secrets', { csi: { driver: DRIVER } }));
    await until(() => running('csi-token-secrets'), 40_000, 'csi-token-secrets running');
    const secretsUid = pod('csi-token-secrets')!.metadata.uid;
    const secretPublish = calls('NodePublishVolume').find((r) => r.volume_id === `csi-${sha(`${secretsUid}data`)}`)!;
    expect(Object.keys(JSON.parse(secretPublish.secrets['csi.storage.k8s.io/serviceAccount.tokens']))).toEqual([
      '',
      'vault',
    ]);
    expect(secretPublish.volume_context).not.toHaveProperty('csi.storage.k8s.io/serviceAccount.tokens');
    store().remove('pods', 'default', 'csi-token-secrets', {});
    const cleared = structuredClone(store().get('storage.k8s.io/csidrivers', '', DRIVER) as Obj);
    delete cleared.spec.tokenRequests;
    delete cleared.spec.requiresRepublish;
    delete cleared.spec.serviceAccountTokenInSecrets;
    store().update('storage.k8s.io/csidrivers', cleared);
  }, 90_000);

  it('generic ephemeral volumes use the claim <pod>-<volume> only when the pod owns it', async () => {
    store().create('storage.k8s.io/volumeattachments', attach('vol-eph'));
    store().create(
      'pods',
      volPod(
        'eph',
        {
          ephemeral: {
            volumeClaimTemplate: {
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          },
        },
        'echo eph > /data/f; sleep 3600',
      ),
    );
    const uid = (await until(() => pod('eph')?.metadata?.uid, 10_000, 'eph uid')) as string;
    createBoundClaim(store(), {
      volume: pv('pv-eph', 'vol-eph'),
      claim: pvc('eph-data', 'pv-eph', {
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'eph', uid: 'someone-else', controller: true }],
      }),
    });
    await failedMount('eph', 'PVC default/eph-data was not created for pod default/eph (pod is not owner)');
    const cur = structuredClone(store().get('persistentvolumeclaims', 'default', 'eph-data') as Obj);
    cur.metadata.ownerReferences[0].uid = uid;
    store().update('persistentvolumeclaims', cur);
    await until(() => running('eph'), 40_000, 'eph running');
    await until(() => existsSync(join(backing, 'vol-eph', 'f')), 10_000, 'ephemeral claim written');
  }, 60_000);

  it('refuses a PV of a driver that is not registered, with upstream message', async () => {
    createBoundClaim(store(), {
      volume: {
        ...pv('pv-missing', 'vol-m'),
        spec: { ...pv('pv-missing', 'vol-m').spec, csi: { driver: 'missing.csi', volumeHandle: 'vol-m' } },
      },
      claim: pvc('claim-missing', 'pv-missing'),
    });
    store().create('pods', volPod('csi-missing', { persistentVolumeClaim: { claimName: 'claim-missing' } }));
    await failedMount(
      'csi-missing',
      'kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name missing.csi not found in the list of registered CSI drivers',
    );
    store().remove('pods', 'default', 'csi-missing', {});
  }, 30_000);

  it('deleted pods are unpublished, the shared staging is unstaged once no pod uses it, and nothing stays mounted', async () => {
    for (const name of ['csi-pvc', 'csi-inline', 'eph']) store().remove('pods', 'default', name, {});
    await until(() => calls('NodeUnstageVolume').length >= 2, 40_000, 'unstaged');
    await until(() => mountsUnder(root).length === 0, 20_000, 'no mounts left under the root dir');
    expect(calls('NodeUnpublishVolume').map((r) => r.volume_id)).toEqual(expect.arrayContaining(['vol-1', 'vol-eph']));
    expect(calls('NodeUnpublishVolume').filter((r) => ['vol-1', 'vol-eph'].includes(r.volume_id))).toHaveLength(2);
    expect(
      calls('NodeUnstageVolume')
        .map((r) => r.staging_target_path)
        .sort((a, b) => a.localeCompare(b)),
    ).toEqual(
      [
        join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha('vol-1'), 'globalmount'),
        join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha('vol-eph'), 'globalmount'),
      ].sort(),
    );
    // The staging's directory goes once the driver answered the unstage.
    await until(
      () => !existsSync(join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha('vol-1'))),
      10_000,
      'staging directory removed',
    );
    expect(readFileSync(join(backing, 'vol-1', 'out'), 'utf8')).toBe('written\n');
    await until(() => !(store().get('nodes', '', node) as Obj).status?.volumesInUse, 20_000, 'volumesInUse cleared');
  }, 60_000);

  describe("NodeStage / NodeUnstage errors, as upstream's CSI mock tests expect", () => {
    it('a final NodeStage error staged nothing: the deleted pod gets no NodeUnstage', async () => {
      driver.fail('NodeStageVolume', 3 /* INVALID_ARGUMENT */);
      try {
        errorPod('stage-final', 'vol-sf');
        await failedMount(
          'stage-final',
          'MountVolume.MountDevice failed for volume "pv-stage-final" : rpc error: code = InvalidArgument desc = injected INVALID_ARGUMENT for NodeStageVolume',
        );
        const uid = pod('stage-final')!.metadata.uid;
        store().remove('pods', 'default', 'stage-final', {});
        await until(() => !existsSync(join(root, 'pods', uid)), 20_000, 'pod directory gone');
        await new Promise((r) => setTimeout(r, 4000)); // two housekeeping passes
        expect(of('NodeUnstageVolume', 'vol-sf')).toEqual([]);
        expect(existsSync(stageDir('vol-sf'))).toBe(false);
      } finally {
        driver.fail('NodeStageVolume', 0, 0);
      }
    }, 40_000);

    it('an uncertain NodeStage error (DeadlineExceeded) is undone: the deleted pod gets NodeUnstage', async () => {
      driver.fail('NodeStageVolume', 4 /* DEADLINE_EXCEEDED */);
      try {
        errorPod('stage-uncertain', 'vol-su');
        await failedMount('stage-uncertain', 'rpc error: code = DeadlineExceeded');
        store().remove('pods', 'default', 'stage-uncertain', {});
        await until(() => of('NodeUnstageVolume', 'vol-su').length, 20_000, 'NodeUnstage after the uncertain stage');
        await until(() => !existsSync(stageDir('vol-su')), 10_000, 'staging removed');
      } finally {
        driver.fail('NodeStageVolume', 0, 0);
      }
    }, 40_000);

    it('a failed NodeUnstage is retried by housekeeping until it succeeds', async () => {
      driver.fail('NodeUnstageVolume', 3 /* INVALID_ARGUMENT */, 2);
      errorPod('unstage-fails', 'vol-uf');
      await until(() => running('unstage-fails'), 30_000, 'unstage-fails running');
      store().remove('pods', 'default', 'unstage-fails', {});
      await until(() => of('NodeUnstageVolume', 'vol-uf').length >= 3, 30_000, 'NodeUnstage retried');
      await until(() => !existsSync(stageDir('vol-uf')), 10_000, 'staging removed once unstaged');
      expect(mountsUnder(stageDir('vol-uf'))).toEqual([]);
    }, 60_000);
  });

  it("two pods: the second is staged again after the first one's NodeUnstage failed (upstream's mock test)", async () => {
    driver.fail('NodeUnstageVolume', 3 /* INVALID_ARGUMENT */);
    try {
      createBoundClaim(store(), { volume: pv('pv-two-pods', 'vol-tp'), claim: pvc('claim-two-pods', 'pv-two-pods') });
      store().create('storage.k8s.io/volumeattachments', attach('vol-tp'));
      const onClaim = (name: string) => volPod(name, { persistentVolumeClaim: { claimName: 'claim-two-pods' } });
      store().create('pods', onClaim('first'));
      await until(() => running('first'), 30_000, 'first running');
      store().remove('pods', 'default', 'first', {});
      await until(() => of('NodeUnstageVolume', 'vol-tp').length, 30_000, 'the failed NodeUnstage');
      store().create('pods', onClaim('second'));
      await until(() => running('second'), 30_000, 'second running');
      expect(of('NodeStageVolume', 'vol-tp')).toHaveLength(2);
    } finally {
      driver.fail('NodeUnstageVolume', 0, 0);
    }
    store().remove('pods', 'default', 'second', {});
    await until(
      () => !existsSync(join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha('vol-tp'))),
      30_000,
      'unstaged once the second pod is gone',
    );
  }, 90_000);

  describe('NodePublish errors, as upstream SetUpAt handles them', () => {
    const volumeDir = (name: string) =>
      join(root, 'pods', pod(name)!.metadata.uid, 'volumes', 'kubernetes.io~csi', `pv-${name}`);

    it('a final error of a first publish removes the volume directory and its record; the staging stays while the pod retries', async () => {
      driver.fail('NodePublishVolume', 3 /* INVALID_ARGUMENT */);
      try {
        errorPod('publish-final', 'vol-pf');
        await failedMount(
          'publish-final',
          'MountVolume.SetUp failed for volume "pv-publish-final" : rpc error: code = InvalidArgument desc = injected INVALID_ARGUMENT for NodePublishVolume',
        );
        const dir = volumeDir('publish-final');
        await until(() => !existsSync(dir), 10_000, 'the volume directory removed after the final error');
        await new Promise((r) => setTimeout(r, 4000)); // two housekeeping passes
        expect(of('NodePublishVolume', 'vol-pf').length).toBeGreaterThan(1); // retried
        expect(of('NodeStageVolume', 'vol-pf')).toHaveLength(1); // staged once, as upstream's MountDevice
        expect(of('NodeUnstageVolume', 'vol-pf')).toEqual([]);
        expect(mountsUnder(stageDir('vol-pf'))).toHaveLength(1);
      } finally {
        driver.fail('NodePublishVolume', 0, 0);
      }
      await until(() => running('publish-final'), 30_000, 'publish-final running once the driver publishes');
      expect(existsSync(join(volumeDir('publish-final'), 'vol_data.json'))).toBe(true);
      store().remove('pods', 'default', 'publish-final', {});
      await until(() => of('NodeUnstageVolume', 'vol-pf').length, 30_000, 'unstaged once the pod is gone');
    }, 60_000);

    it('a final error of a publish whose pod is deleted meanwhile: the staging is released with the pod', async () => {
      driver.fail('NodePublishVolume', 3 /* INVALID_ARGUMENT */);
      try {
        errorPod('publish-gone', 'vol-pg');
        await failedMount('publish-gone', 'injected INVALID_ARGUMENT for NodePublishVolume');
        const uid = pod('publish-gone')!.metadata.uid;
        store().remove('pods', 'default', 'publish-gone', {});
        await until(() => !existsSync(join(root, 'pods', uid)), 20_000, 'pod directory gone');
        await until(() => of('NodeUnstageVolume', 'vol-pg').length, 20_000, 'NodeUnstage of the held staging');
        // The driver records the call before it answers; the kubelet removes the staging directory after the answer.
        await until(() => !existsSync(stageDir('vol-pg')), 10_000, 'staging directory removed');
      } finally {
        driver.fail('NodePublishVolume', 0, 0);
      }
    }, 60_000);

    it('an uncertain publish error (DeadlineExceeded) keeps the directory and record: the deleted pod gets NodeUnpublish', async () => {
      driver.fail('NodePublishVolume', 4 /* DEADLINE_EXCEEDED */);
      try {
        errorPod('publish-uncertain', 'vol-pu');
        await failedMount('publish-uncertain', 'rpc error: code = DeadlineExceeded');
        expect(existsSync(join(volumeDir('publish-uncertain'), 'vol_data.json'))).toBe(true);
        store().remove('pods', 'default', 'publish-uncertain', {});
        await until(() => of('NodeUnpublishVolume', 'vol-pu').length, 20_000, 'NodeUnpublish of the uncertain target');
        await until(() => of('NodeUnstageVolume', 'vol-pu').length, 20_000, 'then NodeUnstage');
      } finally {
        driver.fail('NodePublishVolume', 0, 0);
      }
    }, 60_000);

    it('a final error of a republish (requiresRepublish) keeps the volume the container sees', async () => {
      if (!store().get('storage.k8s.io/csidrivers', '', DRIVER))
        store().create('storage.k8s.io/csidrivers', csiDriverObj(['Persistent']));
      const setRepublish = (on: boolean) => {
        const cur = structuredClone(store().get('storage.k8s.io/csidrivers', '', DRIVER) as Obj);
        if (on) cur.spec.requiresRepublish = true;
        else delete cur.spec.requiresRepublish;
        store().update('storage.k8s.io/csidrivers', cur);
      };
      setRepublish(true);
      try {
        await new Promise((r) => setTimeout(r, 5500)); // the kubelet's object cache (5 s)
        errorPod('republish-final', 'vol-rf');
        await until(() => running('republish-final'), 30_000, 'republish-final running');
        const published = of('NodePublishVolume', 'vol-rf').length;
        driver.fail('NodePublishVolume', 3 /* INVALID_ARGUMENT */);
        await until(() => of('NodePublishVolume', 'vol-rf').length > published + 1, 20_000, 'republishes failed');
        expect(existsSync(join(volumeDir('republish-final'), 'vol_data.json'))).toBe(true);
        expect(mountsUnder(join(volumeDir('republish-final'), 'mount'))).toHaveLength(1);
        expect(of('NodeStageVolume', 'vol-rf')).toHaveLength(1); // a republish does not stage again
        expect(running('republish-final')).toBeTruthy();
        // Even with nothing mounted on the target any more, a failed republish leaves the volume to the teardown.
        execFileSync('umount', [join(volumeDir('republish-final'), 'mount')]);
        const failed = of('NodePublishVolume', 'vol-rf').length;
        await until(() => of('NodePublishVolume', 'vol-rf').length > failed + 1, 20_000, 'republishes failed again');
        expect(existsSync(join(volumeDir('republish-final'), 'vol_data.json'))).toBe(true);
      } finally {
        driver.fail('NodePublishVolume', 0, 0);
        setRepublish(false);
      }
      store().remove('pods', 'default', 'republish-final', {});
      await until(() => of('NodeUnstageVolume', 'vol-rf').length, 30_000, 'unstaged once the pod is gone');
    }, 90_000);
  });

  it('refuses a driver without a CSI 1.x version (NotifyRegistrationStatus false) and deregisters a driver whose socket goes', async () => {
    const old = await startFakeCsiDriver({ root, backing, name: 'old.csi.k8s.io', versions: ['0.3.0'] });
    try {
      await until(() => old.statuses.length, 20_000, 'old driver status');
      expect(old.statuses[0]).toEqual({
        plugin_registered: false,
        error:
          'RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver old.csi.k8s.io at endpoint ' +
          `${old.driverSocket}: none of the CSI versions reported by this driver are supported`,
      });
    } finally {
      await old.close();
    }
    await driver.close();
    await until(
      () => ((store().get('storage.k8s.io/csinodes', '', node) as Obj).spec.drivers ?? []).length === 0,
      20_000,
      'driver removed from CSINode',
    );
    await until(
      () => !(store().get('nodes', '', node) as Obj).metadata.annotations?.['csi.volume.kubernetes.io/nodeid'],
      20_000,
      'annotation removed',
    );
  }, 40_000);

  it('housekeeping does not wait on a hung driver: its orphan is kept and retried while other orphans go', async () => {
    const hung = await startFakeCsiDriver({ root, backing, name: 'hung.csi.k8s.io', hang: ['NodeUnpublishVolume'] });
    try {
      await until(() => hung.statuses.length, 20_000, 'hung driver registered');
      const orphan = (uid: string, volData?: object) => {
        const staging = join(root, `staging-${uid}`);
        const vol = join(staging, 'volumes', 'kubernetes.io~csi', 'v');
        mkdirSync(join(vol, 'mount'), { recursive: true });
        if (volData) writeFileSync(join(vol, 'vol_data.json'), JSON.stringify(volData));
        mkdirSync(join(root, 'pods'), { recursive: true });
        renameSync(staging, join(root, 'pods', uid));
      };
      orphan('orphan-hung', {
        specVolID: 'v',
        volumeHandle: 'h1',
        driverName: 'hung.csi.k8s.io',
        nodeName: node,
        volumeLifecycleMode: 'Persistent',
      });
      await until(
        () => hung.calls.some((x) => x.method === 'NodeUnpublishVolume'),
        20_000,
        'unpublish asked of the hung driver',
      );
      orphan('orphan-plain');
      await until(() => !existsSync(join(root, 'pods', 'orphan-plain')), 20_000, 'the other orphan removed meanwhile');
      expect(existsSync(join(root, 'pods', 'orphan-hung', 'volumes', 'kubernetes.io~csi', 'v', 'vol_data.json'))).toBe(
        true,
      );
    } finally {
      await hung.close();
    }
  }, 40_000);
});
