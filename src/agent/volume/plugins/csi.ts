/**
 * CSI volumes (upstream pkg/volume/csi, kubelet side): inline `csi` volumes (lifecycle mode
 * Ephemeral) and PersistentVolumes with a `csi` source (Persistent, reached through a claim).
 * Set-up, as upstream's MountDevice + SetUpAt:
 *  1. the driver must be registered (plugin watcher); its CSIDriver object, when there is one,
 *     says whether the lifecycle mode is supported, whether attach is required (default yes),
 *     whether it wants the pod's facts (podInfoOnMount) and its fsGroupPolicy;
 *  2. Persistent: an attachable volume's VolumeAttachment (made by the attach/detach controller
 *     and the driver's attacher) must be attached — its attachmentMetadata is the publish context;
 *     with STAGE_UNSTAGE_VOLUME, NodeStageVolume at `<root>/plugins/kubernetes.io/csi/<driver>/<sha>/globalmount`
 *     (once while it stays staged: not again for another pod, a retry or a republish);
 *  3. vol_data.json beside the target, then NodePublishVolume at `<pod volumes>/kubernetes.io~csi/<name>/mount`;
 *  4. fsGroup applied by the kubelet unless the driver has VOLUME_MOUNT_GROUP (it gets it in the capability).
 * Records: a pod's vol_data.json is written before staging and publishing, the staging's own
 * (`…/<driver>/<sha>/vol_data.json`) before NodeStageVolume; a final error of NodeStageVolume
 * drops what it wrote, an uncertain one (timeout, unavailable) keeps it (upstream's uncertain
 * state: the volume is unstaged once unused). A final error of a first NodePublishVolume removes
 * the pod's volume directory and record, as upstream's, and holds the staging while the pod
 * retries. Teardown reads them (so it works for orphans and after a restart): NodeUnpublishVolume,
 * then NodeUnstageVolume once no pod's record names the volume; an unstage that failed is retried
 * by housekeeping (`releaseUnused`).
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { messageOf } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/logger.js';
import { isFinalError } from '../../../cri/unary-caller.js';
import type { CsiDrivers } from '../csi/csi-drivers.js';
import { attachedContext, csiMeasure, secretData, tokenAttrs } from '../csi/csi-inputs.js';
import { updatePeriodMs } from '../csi/allocatable-updates.js';
import { expandIfNeeded } from '../csi/csi-expand.js';
import { podRef, type EventSink } from '../../events/recorder.js';
import { VolumeOperationError } from '../volume-processing.js';
import { goQuote } from '../../../lib/go-quote.js';
import { csiLog, CsiRelease, driverClient } from '../csi/csi-release.js';
import {
  attachmentName,
  CSI_DIR_NAME,
  CSI_PLUGIN_NAME,
  csiAccessMode,
  inlineVolumeHandle,
  podInfoAttrs,
  blockPaths,
  stagingPath,
  uniqueVolumeName,
  VOL_DATA_FILE,
  type VolData,
} from '../csi/csi-spec.js';
import { fsGroupChangePolicyOf, setVolumeOwnership } from '../ownership.js';
import { bindMountFile, isMountPoint } from '../mount-util.js';
import type { VolumeCapability } from '../csi/csi-client.js';
import type { CsiDriverObj, CsiInlineSource, CsiPv } from '../csi/csi-api-types.js';
import type { MountedVolume, SetUpContext, VolumePlugin } from '../types.js';

const log = csiLog;

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
  claim?: { name: string; namespace: string };
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
  private readonly release: CsiRelease;

  constructor(
    private readonly deps: {
      drivers: CsiDrivers;
      rootDir: string;
      nodeName: string;
      logger?: Logger;
      events?: EventSink;
    },
  ) {
    this.release = new CsiRelease(deps);
  }

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
        publishSecret: src.nodePublishSecretRef
          ? { name: src.nodePublishSecretRef.name, namespace: ctx.pod.metadata.namespace ?? 'default' }
          : undefined,
        mode: 'Ephemeral',
      });
    },
    tearDown: async (dir) => {
      await this.release.tearDown(dir);
      this.recordsWritten.delete(join(dir, VOL_DATA_FILE));
    },
    releaseUnused: () => this.release.releaseUnused(),
    forgetPod: (volumesDir) => {
      this.release.forgetPod(volumesDir);
      for (const record of this.recordsWritten)
        if (record.startsWith(`${volumesDir}/`)) this.recordsWritten.delete(record);
    },
  };

  /**
   * The pods' records this kubelet wrote. One on disk that is not among them was left by an earlier run (upstream's
   * reconstructed volume): a container may still see its target, so a failed publish leaves it for the teardown.
   */
  private readonly recordsWritten = new Set<string>();

  /** Sets up the CSI PersistentVolume `pv` for the claim of `ctx.volume` (persistent-volume.ts). */
  setUpPersistent(
    ctx: SetUpContext,
    pv: CsiPv,
    claim: { name: string; namespace: string; readOnly: boolean },
  ): Promise<MountedVolume> {
    const src = pv.spec.csi;
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
      claim: { name: claim.name, namespace: claim.namespace },
    }).then((m) => ({ ...m, pvcRef: { name: claim.name, namespace: claim.namespace } }));
  }

  /**
   * upstream removeMountDir: the target directory, the record and the volume's directory, unless something is mounted
   * on the target (then the teardown releases it).
   */
  private async removeMountDir(dir: string, target: string): Promise<void> {
    if (await isMountPoint(target)) return;
    await rmdir(target).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
    const record = join(dir, VOL_DATA_FILE);
    await rm(record, { force: true });
    this.recordsWritten.delete(record);
    await rmdir(dir).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  }

  private async publish(p: Publish): Promise<MountedVolume> {
    const { ctx } = p;
    const client = driverClient(this.deps.drivers, p.driver, 'mounter.SetUpAt');
    const csiDriver = ctx.host.hasApiserver
      ? await ctx.host.getClusterObject<CsiDriverObj>(
          `/apis/storage.k8s.io/v1/csidrivers/${encodeURIComponent(p.driver)}`,
        )
      : null;
    const modes = csiDriver?.spec?.volumeLifecycleModes?.length ? csiDriver.spec.volumeLifecycleModes : ['Persistent'];
    if (!csiDriver && p.mode === 'Ephemeral')
      throw new Error(
        log(
          `mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ${p.driver} (no CSIDriver object)`,
        ),
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
    const block = p.pv?.spec.volumeMode === 'Block';
    const accessMode = { mode: csiAccessMode(p.pv?.spec.accessModes, caps.has('SINGLE_NODE_MULTI_WRITER')) };
    const capability: VolumeCapability = block
      ? { block: {}, access_mode: accessMode }
      : {
          mount: {
            fs_type: p.fsType,
            mount_flags: p.pv?.spec.mountOptions ?? [],
            volume_mount_group: caps.has('VOLUME_MOUNT_GROUP') && ctx.fsGroup !== undefined ? String(ctx.fsGroup) : '',
          },
          access_mode: accessMode,
        };
    let publishContext: Record<string, string> = {};
    const attachable = !!p.pv && csiDriver?.spec?.attachRequired !== false;
    if (attachable)
      publishContext = await attachedContext(
        ctx.host,
        p.driver,
        p.volumeHandle,
        this.deps.nodeName,
        updatePeriodMs(csiDriver) !== undefined,
      );
    const uid = ctx.pod.metadata.uid!;
    const bp = block ? blockPaths(this.deps.rootDir, p.specName, uid) : undefined;
    const staging =
      !p.pv || !caps.has('STAGE_UNSTAGE_VOLUME')
        ? ''
        : bp
          ? bp.staging
          : stagingPath(this.deps.rootDir, p.driver, p.volumeHandle);
    const stageRecordDir = bp ? bp.stageRecordDir : dirname(staging);
    // The pod's record first (teardown and the release of staged volumes go by it), then the staging.
    const dir = join(ctx.volumesDir, CSI_DIR_NAME, p.specName);
    const target = bp ? bp.publish : join(dir, 'mount');
    const podRecord = join(dir, VOL_DATA_FILE);
    const fresh = !existsSync(podRecord);
    const reconstructed = !fresh && !this.recordsWritten.has(podRecord);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const volData: VolData = {
      specVolID: p.specName,
      volumeHandle: p.volumeHandle,
      driverName: p.driver,
      nodeName: this.deps.nodeName,
      attachmentID: attachmentName(p.volumeHandle, p.driver, this.deps.nodeName),
      volumeLifecycleMode: p.mode,
      ...(staging ? { stagingTargetPath: staging, stageRecordDir } : {}),
      ...(bp
        ? {
            volumeMode: 'Block' as const,
            publishPath: bp.publish,
            globalMapPath: bp.globalMap,
            podDeviceMapPath: bp.podDeviceMap,
          }
        : {}),
    };
    await writeFile(podRecord, JSON.stringify(volData));
    this.recordsWritten.add(podRecord);
    this.release.unhold(dir);
    const pv = p.pv;
    if (pv && staging)
      await this.release.serialized(stageRecordDir, async () => {
        // Staged by this kubelet already (another pod's, or this pod's earlier try or publish): upstream's
        // MountDevice runs only for a volume not globally mounted. A restart forgets it, and stages again, as upstream.
        if (this.release.isStaged(stageRecordDir)) return;
        await mkdir(staging, { recursive: true, mode: 0o750 });
        await mkdir(stageRecordDir, { recursive: true, mode: 0o750 });
        const cleanup = bp ? [staging, dirname(bp.stageRecordDir), dirname(bp.publish)] : undefined;
        await writeFile(
          join(stageRecordDir, VOL_DATA_FILE),
          JSON.stringify({
            volumeHandle: p.volumeHandle,
            driverName: p.driver,
            stagingTargetPath: staging,
            ...(cleanup ? { cleanup } : {}),
          }),
        );
        const src = pv.spec.csi;
        try {
          await client.nodeStageVolume({
            volume_id: p.volumeHandle,
            publish_context: publishContext,
            staging_target_path: staging,
            volume_capability: capability,
            secrets: src.nodeStageSecretRef
              ? await secretData(ctx.host, src.nodeStageSecretRef, 'NodeStageSecretRef')
              : {},
            volume_context: src.volumeAttributes ?? {},
          });
          this.release.markStaged(stageRecordDir);
        } catch (err) {
          // A final error staged nothing: forget this pod's new record (and the staging if no one else
          // uses it). An uncertain one (a timeout…) keeps both, so the volume is unstaged once unused.
          if (isFinalError(err) && fresh) {
            await rm(dir, { recursive: true, force: true });
            if (!this.release.inUse(volData)) await rm(stageRecordDir, { recursive: true, force: true });
          }
          throw new VolumeOperationError('stage', messageOf(err));
        }
      });
    const tokens = await tokenAttrs(ctx, csiDriver?.spec?.tokenRequests ?? []);
    // A driver that asks for them gets the tokens with its secrets, which drivers keep out of their logs; the volume
    // context is logged freely (upstream CSIServiceAccountTokenSecrets, beta and on).
    const tokensInSecrets = csiDriver?.spec?.serviceAccountTokenInSecrets === true;
    const secrets = {
      ...(p.publishSecret ? await secretData(ctx.host, p.publishSecret, 'NodePublishSecretRef') : {}),
      ...(tokensInSecrets ? tokens : {}),
    };
    const attributes = {
      ...p.attributes,
      ...(csiDriver?.spec?.podInfoOnMount ? podInfoAttrs(ctx.pod, p.mode === 'Ephemeral') : {}),
      ...(tokensInSecrets ? {} : tokens),
    };
    if (bp) await mkdir(dirname(bp.publish), { recursive: true, mode: 0o750 });
    await client
      .nodePublishVolume({
        volume_id: p.volumeHandle,
        publish_context: publishContext,
        staging_target_path: staging,
        target_path: target,
        volume_capability: capability,
        readonly: p.readOnly,
        secrets,
        volume_context: attributes,
      })
      .catch(async (err: unknown) => {
        // upstream SetUpAt: a final error published nothing, so the volume's directory and record go — not on a
        // republish (kubernetes/kubernetes#139045) nor for a volume an earlier run set up (#136603), whose target a
        // container may still see.
        if (!bp && isFinalError(err) && !ctx.remount && !reconstructed) {
          await this.removeMountDir(dir, target).catch((removal: unknown) =>
            this.deps.logger?.error(
              log(
                `mounter.SetupAt failed to remove mount dir after a NodePublish() error [${dir}]: ${messageOf(removal)}`,
              ),
            ),
          );
          if (staging) this.release.hold(dir, volData);
        }
        throw new VolumeOperationError('publish', messageOf(err));
      });
    const mounted = {
      readOnly: p.readOnly,
      plugin: CSI_DIR_NAME,
      pluginName: `${CSI_PLUGIN_NAME}:${p.driver}`,
      dir: join(CSI_DIR_NAME, p.specName),
      ...(attachable ? { uniqueName: uniqueVolumeName(p.driver, p.volumeHandle) } : {}),
    };
    if (bp) {
      // upstream MapBlockVolume: the published device bound to the node's global map and into the pod.
      try {
        await bindMountFile(bp.publish, bp.globalMap);
        await bindMountFile(bp.publish, bp.podDeviceMap);
      } catch (err) {
        throw new VolumeOperationError('map', messageOf(err));
      }
      // Upstream's events of a mapped device (reason SuccessfulMountVolume), the node's map then the pod's.
      const mapped = `MapVolume.MapPodDevice succeeded for volume ${goQuote(p.specName)}`;
      for (const detail of [
        `globalMapPath ${goQuote(dirname(bp.globalMap))}`,
        `volumeMapPath ${goQuote(dirname(bp.podDeviceMap))}`,
      ])
        this.deps.events?.record(podRef(ctx.pod), 'Normal', 'SuccessfulMountVolume', `${mapped} ${detail}`);
      return { ...mounted, path: bp.podDeviceMap, devicePath: bp.podDeviceMap };
    }
    const policy = csiDriver ? (csiDriver.spec?.fsGroupPolicy ?? 'ReadWriteOnceWithFSType') : 'ReadWriteOnceWithFSType';
    if (!caps.has('VOLUME_MOUNT_GROUP') && kubeletAppliesFsGroup(p, ctx.fsGroup, policy))
      await setVolumeOwnership(target, ctx.fsGroup, {
        readOnly: p.readOnly,
        changePolicy: fsGroupChangePolicyOf(ctx.pod),
        progress: { pod: ctx.pod, events: this.deps.events, logger: this.deps.logger },
      }).catch((err: unknown) => {
        throw new Error(`applyFSGroup failed for vol ${p.volumeHandle}: ${messageOf(err)}`);
      });
    const expanded: { capacity?: string } = {};
    return {
      ...mounted,
      path: target,
      seLinuxRelabel: true,
      // requiresRepublish: NodePublishVolume again on every pod sync (fresh tokens reach the driver).
      ...(csiDriver?.spec?.requiresRepublish ? { remountEachSync: true } : {}),
      ...(caps.has('GET_VOLUME_STATS') ? { metrics: csiMeasure(client, p.volumeHandle, target) } : {}),
      ...(p.pv && p.claim
        ? {
            onSync: () =>
              expandIfNeeded({
                done: expanded,
                host: ctx.host,
                client,
                canExpand: caps.has('EXPAND_VOLUME'),
                pod: ctx.pod,
                claim: p.claim!,
                pvName: p.specName,
                volumeHandle: p.volumeHandle,
                target,
                staging,
                capability,
                nodeName: this.deps.nodeName,
                events: this.deps.events,
                secrets: (ref) => secretData(ctx.host, ref, 'NodeExpandSecretRef'),
              }),
          }
        : {}),
    };
  }
}
