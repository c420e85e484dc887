/**
 * CSI volumes (upstream pkg/volume/csi, kubelet side): inline `csi` volumes (lifecycle mode
 * Ephemeral) and PersistentVolumes with a `csi` source (Persistent, reached through a claim).
 * Set-up, as upstream's MountDevice + SetUpAt:
 *  1. the driver must be registered (plugin watcher); its CSIDriver object, when there is one,
 *     says whether the lifecycle mode is supported, whether attach is required (default yes),
 *     whether it wants the pod's facts (podInfoOnMount) and its fsGroupPolicy;
 *  2. Persistent: an attachable volume's VolumeAttachment (made by the attach/detach controller
 *     and the driver's attacher) must be attached — its attachmentMetadata is the publish context;
 *     with STAGE_UNSTAGE_VOLUME, NodeStageVolume at `<root>/plugins/kubernetes.io/csi/<driver>/<sha>/globalmount`;
 *  3. vol_data.json beside the target, then NodePublishVolume at `<pod volumes>/kubernetes.io~csi/<name>/mount`;
 *  4. fsGroup applied by the kubelet unless the driver has VOLUME_MOUNT_GROUP (it gets it in the capability).
 * Records: a pod's vol_data.json is written before staging and publishing, the staging's own
 * (`…/<driver>/<sha>/vol_data.json`) before NodeStageVolume; a final error of NodeStageVolume
 * drops what it wrote, an uncertain one (timeout, unavailable) keeps it (upstream's uncertain
 * state: the volume is unstaged once unused). Teardown reads them (so it works for orphans and
 * after a restart): NodeUnpublishVolume, then NodeUnstageVolume once no pod's record names the
 * volume; an unstage that failed is retried by housekeeping (`releaseUnused`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { messageOf } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/logger.js';
import { isFinalError } from '../../../cri/unary-caller.js';
import { listDirSync, statSyncOrUndefined } from '../../../lib/fs-util.js';
import type { CsiDrivers } from '../csi/csi-drivers.js';
import type { CsiClient } from '../csi/csi-client.js';
import {
  attachmentName,
  CSI_DIR_NAME,
  CSI_PLUGIN_NAME,
  csiAccessMode,
  inlineVolumeHandle,
  parseVolData,
  podInfoAttrs,
  stagingPath,
  uniqueVolumeName,
  VOL_DATA_FILE,
  type VolData,
} from '../csi/csi-spec.js';
import { setVolumeOwnership } from '../ownership.js';
import type { MountedVolume, SetUpContext, VolumeHost, VolumeMeasure, VolumePlugin } from '../types.js';

const log = (msg: string) => `${CSI_PLUGIN_NAME}: ${msg}`;

/** storage.k8s.io/v1 CSIDriver, the fields the kubelet reads. */
interface CsiDriverObj {
  spec?: {
    attachRequired?: boolean;
    podInfoOnMount?: boolean;
    volumeLifecycleModes?: string[];
    fsGroupPolicy?: string;
    tokenRequests?: { audience?: string; expirationSeconds?: number }[];
    requiresRepublish?: boolean;
  };
}
/** core/v1 CSIPersistentVolumeSource. */
export interface CsiPvSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodeStageSecretRef?: { name: string; namespace: string };
  nodePublishSecretRef?: { name: string; namespace: string };
}
/** A PersistentVolume with a csi source. */
export interface CsiPv {
  metadata: { name: string };
  spec: { csi: CsiPvSource; accessModes?: string[]; mountOptions?: string[]; volumeMode?: string };
}
interface CsiInlineSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: { name: string };
}

/** What one publish needs. */
interface Publish {
  ctx: SetUpContext;
  specName: string;
  driver: string;
  volumeHandle: string;
  readOnly: boolean;
  fsType: string;
  attributes: Record<string, string>;
  publishSecret?: { name: string; namespace: string };
  mode: 'Persistent' | 'Ephemeral';
  pv?: CsiPv;
}

async function secretData(host: VolumeHost, ref: { name: string; namespace: string }, what: string): Promise<Record<string, string>> {
  const s = await host.getObject<{ data?: Record<string, string> }>('secrets', ref.namespace, ref.name).catch((err: unknown) => {
    throw new Error(`fetching ${what} ${ref.namespace}/${ref.name} failed: ${messageOf(err)}`);
  });
  if (!s) throw new Error(`fetching ${what} ${ref.namespace}/${ref.name} failed: secrets "${ref.name}" not found`);
  return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
}

/** upstream supportsFSGroup: whether the kubelet applies fsGroup to the published volume. */
function kubeletAppliesFsGroup(p: Publish, fsGroup: number | undefined, policy: string): boolean {
  if (fsGroup === undefined || policy === 'None' || p.readOnly) return false;
  if (policy === 'File') return true;
  if (!p.fsType) return false;
  if (p.pv) return (p.pv.spec.accessModes ?? []).includes('ReadWriteOnce');
  return true;
}

/** The CSI plugin over the registered `drivers`. */
export class CsiVolumes {
  constructor(private readonly d: { drivers: CsiDrivers; rootDir: string; nodeName: string; logger?: Logger }) {}

  /** The VolumePlugin of inline `csi` volumes; its `tearDown` releases every CSI volume (inline or PV). */
  readonly plugin: VolumePlugin = {
    dirName: CSI_DIR_NAME,
    field: 'csi',
    remountEachSync: false,
    setUp: (ctx) => {
      const src = ctx.volume.csi as CsiInlineSource;
      const uid = ctx.pod.metadata.uid!;
      return this.publish({
        ctx,
        specName: ctx.volume.name,
        driver: src.driver,
        volumeHandle: inlineVolumeHandle(uid, ctx.volume.name),
        readOnly: src.readOnly === true,
        fsType: src.fsType ?? '',
        attributes: src.volumeAttributes ?? {},
        publishSecret: src.nodePublishSecretRef ? { name: src.nodePublishSecretRef.name, namespace: ctx.pod.metadata.namespace ?? 'default' } : undefined,
        mode: 'Ephemeral',
      });
    },
    tearDown: (dir) => this.tearDown(dir),
    releaseUnused: () => this.releaseUnused(),
  };

  /** Sets up the CSI PersistentVolume `pv` for the claim of `ctx.volume` (persistent-volume.ts). */
  setUpPersistent(ctx: SetUpContext, pv: CsiPv, claim: { name: string; namespace: string; readOnly: boolean }): Promise<MountedVolume> {
    const src = pv.spec.csi;
    if (pv.spec.volumeMode === 'Block')
      return Promise.reject(new Error(`raw block CSI volumes are not supported by tskubelet (PersistentVolume "${pv.metadata.name}")`));
    return this.publish({
      ctx,
      specName: pv.metadata.name,
      driver: src.driver,
      volumeHandle: src.volumeHandle,
      readOnly: claim.readOnly || src.readOnly === true,
      fsType: src.fsType ?? '',
      attributes: src.volumeAttributes ?? {},
      publishSecret: src.nodePublishSecretRef,
      mode: 'Persistent',
      pv,
    }).then((m) => ({ ...m, pvcRef: { name: claim.name, namespace: claim.namespace } }));
  }

  private client(driver: string, what: string): CsiClient {
    try {
      return this.d.drivers.client(driver);
    } catch (err) {
      throw new Error(log(`${what} failed to get CSI client: ${messageOf(err)}`));
    }
  }

  private async publish(p: Publish): Promise<MountedVolume> {
    const { ctx } = p;
    const client = this.client(p.driver, 'mounter.SetUpAt');
    const csiDriver = ctx.host.hasApiserver
      ? await ctx.host.getClusterObject<CsiDriverObj>(`/apis/storage.k8s.io/v1/csidrivers/${encodeURIComponent(p.driver)}`)
      : null;
    const modes = csiDriver?.spec?.volumeLifecycleModes?.length ? csiDriver.spec.volumeLifecycleModes : ['Persistent'];
    if (!csiDriver && p.mode === 'Ephemeral')
      throw new Error(
        log(`mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ${p.driver} (no CSIDriver object)`),
      );
    if (csiDriver && !modes.includes(p.mode))
      throw new Error(
        log(
          `mounter.SetupAt failed to check volume lifecycle mode: volume mode "${p.mode}" not supported by driver ${p.driver} (only supports ${JSON.stringify(modes)})`,
        ),
      );
    const caps = await client.nodeCapabilities().catch((err: unknown) => {
      throw new Error(log(`mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: ${messageOf(err)}`));
    });
    const capability = {
      mount: {
        fs_type: p.fsType,
        mount_flags: p.pv?.spec.mountOptions ?? [],
        volume_mount_group: caps.has('VOLUME_MOUNT_GROUP') && ctx.fsGroup !== undefined ? String(ctx.fsGroup) : '',
      },
      access_mode: { mode: csiAccessMode(p.pv?.spec.accessModes, caps.has('SINGLE_NODE_MULTI_WRITER')) },
    };
    let publishContext: Record<string, string> = {};
    const attachable = !!p.pv && csiDriver?.spec?.attachRequired !== false;
    if (attachable) publishContext = await this.attached(ctx.host, p.driver, p.volumeHandle);
    const staging = p.pv && caps.has('STAGE_UNSTAGE_VOLUME') ? stagingPath(this.d.rootDir, p.driver, p.volumeHandle) : '';
    // The pod's record first (teardown and the release of staged volumes go by it), then the staging.
    const dir = join(ctx.volumesDir, CSI_DIR_NAME, p.specName);
    const target = join(dir, 'mount');
    const podRecord = join(dir, VOL_DATA_FILE);
    const fresh = !existsSync(podRecord);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const volData: VolData = {
      specVolID: p.specName,
      volumeHandle: p.volumeHandle,
      driverName: p.driver,
      nodeName: this.d.nodeName,
      attachmentID: attachmentName(p.volumeHandle, p.driver, this.d.nodeName),
      volumeLifecycleMode: p.mode,
      ...(staging ? { stagingTargetPath: staging } : {}),
    };
    await writeFile(podRecord, JSON.stringify(volData));
    const pv = p.pv;
    if (pv && staging)
      await this.serialized(dirname(staging), async () => {
        await mkdir(staging, { recursive: true, mode: 0o750 });
        await writeFile(join(dirname(staging), VOL_DATA_FILE), JSON.stringify({ volumeHandle: p.volumeHandle, driverName: p.driver }));
        const src = pv.spec.csi;
        try {
          await client.nodeStageVolume({
            volume_id: p.volumeHandle,
            publish_context: publishContext,
            staging_target_path: staging,
            volume_capability: capability,
            secrets: src.nodeStageSecretRef ? await secretData(ctx.host, src.nodeStageSecretRef, 'NodeStageSecretRef') : {},
            volume_context: src.volumeAttributes ?? {},
          });
        } catch (err) {
          // A final error staged nothing: forget this pod's new record (and the staging if no one else
          // uses it). An uncertain one (a timeout…) keeps both, so the volume is unstaged once unused.
          if (isFinalError(err) && fresh) {
            await rm(dir, { recursive: true, force: true });
            if (!this.inUse(volData)) await rm(dirname(staging), { recursive: true, force: true });
          }
          throw err;
        }
      });
    const secrets = p.publishSecret ? await secretData(ctx.host, p.publishSecret, 'NodePublishSecretRef') : {};
    const attributes = {
      ...p.attributes,
      ...(csiDriver?.spec?.podInfoOnMount ? podInfoAttrs(ctx.pod, p.mode === 'Ephemeral') : {}),
      ...(await this.tokenAttrs(ctx, csiDriver?.spec?.tokenRequests ?? [])),
    };
    await client.nodePublishVolume({
      volume_id: p.volumeHandle,
      publish_context: publishContext,
      staging_target_path: staging,
      target_path: target,
      volume_capability: capability,
      readonly: p.readOnly,
      secrets,
      volume_context: attributes,
    });
    const policy = csiDriver ? (csiDriver.spec?.fsGroupPolicy ?? 'ReadWriteOnceWithFSType') : 'ReadWriteOnceWithFSType';
    if (!caps.has('VOLUME_MOUNT_GROUP') && kubeletAppliesFsGroup(p, ctx.fsGroup, policy))
      await setVolumeOwnership(target, ctx.fsGroup, p.readOnly).catch((err: unknown) => {
        throw new Error(`applyFSGroup failed for vol ${p.volumeHandle}: ${messageOf(err)}`);
      });
    return {
      path: target,
      readOnly: p.readOnly,
      plugin: CSI_DIR_NAME,
      dir: join(CSI_DIR_NAME, p.specName),
      seLinuxRelabel: true,
      // requiresRepublish: NodePublishVolume again on every pod sync (fresh tokens reach the driver).
      ...(csiDriver?.spec?.requiresRepublish ? { remountEachSync: true } : {}),
      ...(attachable ? { uniqueName: uniqueVolumeName(p.driver, p.volumeHandle) } : {}),
      ...(caps.has('GET_VOLUME_STATS') ? { metrics: this.measure(client, p.volumeHandle, target) } : {}),
    };
  }

  /**
   * upstream podServiceAccountTokenAttrs: with the CSIDriver's `tokenRequests`, one token per
   * audience bound to the pod, as `csi.storage.k8s.io/serviceAccount.tokens` (JSON: audience →
   * {token, expirationTimestamp}, keys sorted as Go's encoder writes them).
   */
  private async tokenAttrs(ctx: SetUpContext, requests: readonly { audience?: string; expirationSeconds?: number }[]): Promise<Record<string, string>> {
    if (!requests.length) return {};
    const { pod } = ctx;
    const tokens: Record<string, { token: string; expirationTimestamp: string }> = {};
    for (const r of [...requests].sort((a, b) => (a.audience ?? '').localeCompare(b.audience ?? ''))) {
      const audience = r.audience ?? '';
      tokens[audience] = await ctx.host
        .getToken({
          namespace: pod.metadata.namespace ?? 'default',
          serviceAccount: (pod.spec.serviceAccountName as string | undefined) || 'default',
          audiences: audience ? [audience] : [],
          expirationSeconds: r.expirationSeconds ?? 3600,
          pod: { name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' },
        })
        .then((t) => ({ token: t.token, expirationTimestamp: t.expirationTimestamp }))
        .catch((err: unknown) => {
          throw new Error(log(`mounter.SetUpAt failed to get service accoount token attributes: ${messageOf(err)}`));
        });
    }
    return { 'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify(tokens) };
  }

  /** upstream WaitForAttach + getPublishContext: the VolumeAttachment must say attached. */
  private async attached(host: VolumeHost, driver: string, volumeHandle: string): Promise<Record<string, string>> {
    const id = attachmentName(volumeHandle, driver, this.d.nodeName);
    type Va = { status?: { attached?: boolean; attachmentMetadata?: Record<string, string>; attachError?: { message?: string } } };
    const va = await host.getClusterObject<Va>(`/apis/storage.k8s.io/v1/volumeattachments/${id}`, { fresh: true }).catch((err: unknown) => {
      throw new Error(`volume ${volumeHandle} has GET error for volume attachment ${id}: ${messageOf(err)}`);
    });
    if (!va) throw new Error(`volume ${volumeHandle} has GET error for volume attachment ${id}: volumeattachments.storage.k8s.io "${id}" not found`);
    if (va.status?.attachError?.message) throw new Error(`attachment for ${volumeHandle} failed: ${va.status.attachError.message}`);
    if (!va.status?.attached) throw new Error(`volume ${volumeHandle} is not attached for volume attachment ${id}`);
    return va.status.attachmentMetadata ?? {};
  }

  /** upstream MetricsCsi: the driver's NodeGetVolumeStats. */
  private measure(client: CsiClient, volumeHandle: string, target: string): VolumeMeasure {
    return async () => {
      const usage = await client.nodeGetVolumeStats(volumeHandle, target);
      const bytes = usage.find((u) => u.unit === 'BYTES');
      const inodes = usage.find((u) => u.unit === 'INODES');
      return {
        usedBytes: Number(bytes?.used ?? 0),
        capacityBytes: Number(bytes?.total ?? 0),
        availableBytes: Number(bytes?.available ?? 0),
        inodesUsed: Number(inodes?.used ?? 0),
        inodes: Number(inodes?.total ?? 0),
        inodesFree: Number(inodes?.available ?? 0),
      };
    };
  }

  /** Releases the CSI volume whose directory is `dir` (see the file comment); throws while its driver cannot unpublish it. */
  async tearDown(dir: string): Promise<void> {
    const file = join(dir, VOL_DATA_FILE);
    let data: VolData;
    try {
      data = parseVolData(readFileSyncBounded(file));
    } catch {
      return; // never published (or not ours): the generic teardown removes the directory
    }
    const client = this.client(data.driverName, 'Unmounter.TearDownAt');
    await client.nodeUnpublishVolume(data.volumeHandle, join(dir, 'mount')).catch((err: unknown) => {
      throw new Error(log(`Unmounter.TearDownAt failed: ${messageOf(err)}`));
    });
    if (existsSync(join(dir, 'mount'))) await rmdir(join(dir, 'mount'));
    await rm(file, { force: true });
    await rmdir(dir).catch(() => {});
    if (data.stagingTargetPath) await this.unstageIfUnused(dirname(data.stagingTargetPath));
  }

  /**
   * Unstages the staged volume recorded in `stageDir` (`…/<driver>/<sha>`) when no pod's record
   * names it any more; a failure is logged and left to `releaseUnused` (housekeeping).
   */
  private async unstageIfUnused(stageDir: string, used?: Set<string>): Promise<void> {
    let data: VolData;
    try {
      data = parseVolData(readFileSyncBounded(join(stageDir, VOL_DATA_FILE)));
    } catch {
      return;
    }
    if (this.inUse(data, used)) return;
    // Under the volume's lock and with a fresh look: a pod that wrote its record meanwhile keeps it staged.
    await this.serialized(stageDir, async () => {
      if (this.inUse(data)) return;
      try {
        await this.client(data.driverName, 'attacher.UnmountDevice').nodeUnstageVolume(data.volumeHandle, join(stageDir, 'globalmount'));
        await rm(stageDir, { recursive: true, force: true });
      } catch (err) {
        this.d.logger?.warn({ volume: data.volumeHandle, driver: data.driverName }, log(`attacher.UnmountDevice failed: ${messageOf(err)}`));
      }
    });
  }

  /** Runs `fn` after every earlier operation on the staged volume `key` (upstream serializes the operations of a volume). */
  private serialized(key: string, fn: () => Promise<void>): Promise<void> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run
      .catch(() => {})
      .finally(() => {
        if (this.locks.get(key) === tail) this.locks.delete(key);
      });
    this.locks.set(key, tail);
    return run;
  }
  private readonly locks = new Map<string, Promise<void>>();

  /** Housekeeping: unstages every staged volume no pod uses any more (an unstage that failed, a stage that timed out). One pass at a time. */
  releaseUnused(): Promise<void> {
    return (this.releasing ??= (async () => {
      const base = join(this.d.rootDir, 'plugins', CSI_PLUGIN_NAME);
      const staged = (listDirSync(base) ?? []).flatMap((driver) => (listDirSync(join(base, driver)) ?? []).map((sha) => join(base, driver, sha)));
      if (!staged.length) return; // nothing staged: no scan of the pods
      const used = this.usedVolumes();
      for (const dir of staged) await this.unstageIfUnused(dir, used);
    })().finally(() => (this.releasing = undefined)));
  }
  private releasing: Promise<void> | undefined;

  /** Whether a pod's volume on this node uses `v`'s volume (its vol_data.json names the same driver and handle). */
  private inUse(v: { driverName: string; volumeHandle: string }, used = this.usedVolumes()): boolean {
    return used.has(`${v.driverName}\u0000${v.volumeHandle}`);
  }

  /** The volumes the pods' records name ("<driver>\0<handle>"): one scan of the pods' CSI directories. */
  private usedVolumes(): Set<string> {
    const used = new Set<string>();
    const pods = join(this.d.rootDir, 'pods');
    for (const uid of listDirSync(pods) ?? [])
      for (const name of listDirSync(join(pods, uid, 'volumes', CSI_DIR_NAME)) ?? []) {
        try {
          const v = parseVolData(readFileSyncBounded(join(pods, uid, 'volumes', CSI_DIR_NAME, name, VOL_DATA_FILE)));
          used.add(`${v.driverName}\u0000${v.volumeHandle}`);
        } catch {
          // no (readable) vol_data.json: not a published volume
        }
      }
    return used;
  }
}

/** A vol_data.json, read synchronously and bounded (64 KiB: ours are a few hundred bytes). */
function readFileSyncBounded(path: string): string {
  if ((statSyncOrUndefined(path)?.size ?? 0) > 64 * 1024) throw new Error('volume data file too large');
  return readFileSync(path, 'utf8');
}
