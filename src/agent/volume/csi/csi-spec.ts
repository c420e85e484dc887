/**
 * The CSI plugin's decisions, pure, as upstream's pkg/volume/csi: the names and paths it derives
 * from a volume (VolumeAttachment name, inline volume handle, staging path, vol_data.json), the
 * access mode it asks for, the pod facts it passes when the driver wants them, and which driver
 * API versions it accepts.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Pod } from '../../../api/types.js';

/** upstream CSIPluginName, and its directory name under a pod's volumes. */
export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';
export const CSI_DIR_NAME = 'kubernetes.io~csi';
/** The file beside a publish target or a staging path that tells teardown what it was (upstream volDataFileName). */
export const VOL_DATA_FILE = 'vol_data.json';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** upstream getAttachmentName: the VolumeAttachment of a volume on a node. */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${sha256(`${volumeHandle}${driver}${nodeName}`)}`;
}

/** upstream makeVolumeHandle: an inline (ephemeral) CSI volume's handle. */
export function inlineVolumeHandle(podUid: string, volumeName: string): string {
  return `csi-${sha256(`${podUid}${volumeName}`)}`;
}

/** upstream makeDeviceMountPath: `<root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount`. */
export function stagingPath(rootDir: string, driver: string, volumeHandle: string): string {
  return join(rootDir, 'plugins', CSI_PLUGIN_NAME, driver, sha256(volumeHandle), 'globalmount');
}

/** upstream's unique volume name of an attachable CSI volume (node.status.volumesInUse). */
export function uniqueVolumeName(driver: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driver}^${volumeHandle}`;
}

/** What teardown reads back (upstream volDataKey). */
export interface VolData {
  specVolID: string;
  volumeHandle: string;
  driverName: string;
  nodeName: string;
  attachmentID: string;
  volumeLifecycleMode: 'Persistent' | 'Ephemeral';
  /** Not upstream's: the staging path used, so unstaging needs no API object. */
  stagingTargetPath?: string;
  /** Where the staging's own record is (default: the staging path's parent). */
  stageRecordDir?: string;
  /** A raw block volume: where the driver published it and the kubelet's bind mounts of the device. */
  volumeMode?: 'Block';
  publishPath?: string;
  globalMapPath?: string;
  podDeviceMapPath?: string;
  /** On a staging's record: directories removed once the volume is unstaged. */
  cleanup?: string[];
}

/**
 * upstream csi_block.go: a raw block PV's paths under `<root>/plugins/kubernetes.io/csi/volumeDevices`, and the pod's
 * device file.
 */
export function blockPaths(
  rootDir: string,
  pvName: string,
  podUid: string,
): { staging: string; stageRecordDir: string; publish: string; globalMap: string; podDeviceMap: string } {
  const base = join(rootDir, 'plugins', CSI_PLUGIN_NAME, 'volumeDevices');
  return {
    staging: join(base, 'staging', pvName),
    stageRecordDir: join(base, pvName, 'data'),
    publish: join(base, 'publish', pvName, podUid),
    globalMap: join(base, pvName, 'dev', podUid),
    podDeviceMap: join(rootDir, 'pods', podUid, 'volumeDevices', CSI_DIR_NAME, pvName),
  };
}

/** Parses a vol_data.json (bounded by the caller); throws on anything that is not one. */
export function parseVolData(text: string): VolData {
  const v = JSON.parse(text) as Partial<VolData>;
  if (typeof v.volumeHandle !== 'string' || typeof v.driverName !== 'string' || !v.volumeHandle || !v.driverName)
    throw new Error('volume data file has no volumeHandle or driverName');
  return v as VolData;
}

/**
 * upstream asCSIAccessModeV1: a PV's first access mode as a CSI mode; with the driver's
 * SINGLE_NODE_MULTI_WRITER capability, ReadWriteOnce and ReadWriteOncePod get the precise modes.
 */
export function csiAccessMode(pvAccessModes: readonly string[] | undefined, singleNodeMultiWriter: boolean): string {
  switch (pvAccessModes?.[0] ?? 'ReadWriteOnce') {
    case 'ReadOnlyMany':
      return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany':
      return 'MULTI_NODE_MULTI_WRITER';
    case 'ReadWriteOncePod':
      return singleNodeMultiWriter ? 'SINGLE_NODE_SINGLE_WRITER' : 'SINGLE_NODE_WRITER';
    default:
      return singleNodeMultiWriter ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
  }
}

/** upstream getPodInfoAttrs: the pod facts a driver with `podInfoOnMount` gets in its volume context. */
export function podInfoAttrs(pod: Pod, ephemeral: boolean): Record<string, string> {
  return {
    'csi.storage.k8s.io/pod.name': pod.metadata.name ?? '',
    'csi.storage.k8s.io/pod.namespace': pod.metadata.namespace ?? 'default',
    'csi.storage.k8s.io/pod.uid': pod.metadata.uid ?? '',
    'csi.storage.k8s.io/serviceAccount.name':
      (pod.spec as { serviceAccountName?: string }).serviceAccountName ?? 'default',
    'csi.storage.k8s.io/ephemeral': String(ephemeral),
  };
}

/**
 * A driver name as the CSI spec allows it (GetPluginInfo: ≤ 63 characters, alphanumerics at both
 * ends, dashes and dots between). Checked at registration: the name becomes a path component of
 * the staging directory, so one with "/" or ".." must never get that far.
 */
export function isValidDriverName(name: string): boolean {
  return /^[A-Za-z0-9]([-A-Za-z0-9.]{0,61}[A-Za-z0-9])?$/.test(name) && !name.includes('..');
}

/**
 * upstream highestSupportedVersion: the highest of a driver's versions the kubelet speaks (CSI
 * 1.x; 0.x is gone since 1.17), or the error the registration reports.
 */
export function highestSupportedVersion(
  versions: readonly string[],
): { ok: true; version: string } | { ok: false; message: string } {
  if (!versions.length) return { ok: false, message: 'CSI driver reporting empty array for supported versions' };
  const parsed = versions
    .map((v) => ({ v, m: /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(v.trim()) }))
    .filter((x) => x.m && x.m[1] === '1')
    .map((x) => ({ v: x.v, minor: Number(x.m![2] ?? 0), patch: Number(x.m![3] ?? 0) }))
    .sort((a, b) => b.minor - a.minor || b.patch - a.patch);
  if (!parsed.length) return { ok: false, message: `none of the CSI versions reported by this driver are supported` };
  return { ok: true, version: parsed[0].v };
}
