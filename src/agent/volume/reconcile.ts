/**
 * The volume manager's decisions, pure (upstream desired-state-of-world vs actual-state-of-world
 * reconciler, reduced to a kubelet without attach/detach):
 * - `computeVolumeActions`: for one pod being synced, which volumes to set up now (new, or a
 *   remount-each-sync plugin or a volume set up to be republished), which wait for their retry backoff, which are
 * unsupported;
 * - `orphanedPodDirs`: which pod directories on disk belong to no known pod (never one that is).
 */
import type { Pod } from '../../api/types.js';
import type { Volume, VolumePlugin } from './types.js';

/** What is set up for one pod: volume name → the plugin that set it up. */
export type ActualVolumes = ReadonlyMap<string, { plugin: string; remountEachSync?: boolean }>;

/** The decision for one pod. */
export interface VolumeActions {
  setUp: { volume: Volume; plugin: VolumePlugin }[];
  /** Volumes whose last set-up failed and whose backoff has not expired (retry at `retryAtMs`). */
  waiting: { name: string; retryAtMs: number }[];
  unsupported: { name: string; message: string }[];
  /** Volumes set up before but no longer in the spec. */
  tearDown: string[];
}

/** The spec fields of in-tree volume types tskubelet does not implement. */
const UNSUPPORTED_FIELDS = [
  'awsElasticBlockStore',
  'azureDisk',
  'azureFile',
  'cephfs',
  'cinder',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'glusterfs',
  'iscsi',
  'nfs',
  'photonPersistentDisk',
  'portworxVolume',
  'quobyte',
  'rbd',
  'scaleIO',
  'storageos',
  'vsphereVolume',
];

/** Upstream's gitRepo plugin's refusal, the GitRepoVolumeDriver gate being off (v1.33 on). */
export const GIT_REPO_DISABLED =
  'git-repo volume plugin has been disabled; if necessary, it may be re-enabled by enabling the feature-gate `GitRepoVolumeDriver`';

/** Whether `v` is an image volume (`volumes[].image`). */
export const isImageVolume = (v: Volume): boolean => v.image !== undefined && v.image !== null;

/** An image volume's source (core/v1 ImageVolumeSource). */
export interface ImageVolumeSource {
  reference?: string;
  pullPolicy?: string;
}

/** The pod's image volumes. */
export function imageVolumesOf(pod: Pod): { name: string; image: ImageVolumeSource }[] {
  return ((pod.spec.volumes ?? []) as Volume[])
    .filter(isImageVolume)
    .map((v) => ({ name: v.name, image: v.image as ImageVolumeSource }));
}

/** The plugin for `v`, or undefined. */
export function pluginFor(v: Volume, plugins: readonly VolumePlugin[]): VolumePlugin | undefined {
  return plugins.find((p) => v[p.field] !== undefined && v[p.field] !== null);
}

/** Decides what to do for `volumes` of one pod. */
export function computeVolumeActions(
  volumes: readonly Volume[],
  actual: ActualVolumes,
  o: { plugins: readonly VolumePlugin[]; nowMs: number; retryAt: ReadonlyMap<string, number> },
): VolumeActions {
  const out: VolumeActions = { setUp: [], waiting: [], unsupported: [], tearDown: [] };
  const names = new Set<string>();
  for (const v of volumes) {
    names.add(v.name);
    // An image volume is the runtime's to mount; the executor pulls its image (upstream's populator skips it too).
    if (isImageVolume(v)) continue;
    const plugin = pluginFor(v, o.plugins);
    if (!plugin) {
      const field =
        UNSUPPORTED_FIELDS.find((f) => v[f] !== undefined) ?? Object.keys(v).find((k) => k !== 'name') ?? 'none';
      out.unsupported.push({
        name: v.name,
        // gitRepo is disabled upstream too (GitRepoVolumeDriver, off since v1.33): its plugin's own words.
        message:
          field === 'gitRepo'
            ? GIT_REPO_DISABLED
            : `volume type ${field} is not supported by tskubelet (supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim and ephemeral with hostPath, local or CSI PersistentVolumes, csi, image)`,
      });
      continue;
    }
    const retryAtMs = o.retryAt.get(v.name);
    if (retryAtMs !== undefined && retryAtMs > o.nowMs) {
      out.waiting.push({ name: v.name, retryAtMs });
      continue;
    }
    if (!actual.has(v.name) || plugin.remountEachSync || actual.get(v.name)!.remountEachSync)
      out.setUp.push({ volume: v, plugin });
  }
  for (const name of actual.keys()) if (!names.has(name)) out.tearDown.push(name);
  return out;
}

/** Pod directories (by UID) that belong to no known pod. */
export function orphanedPodDirs(onDisk: readonly string[], isKnown: (uid: string) => boolean): string[] {
  return onDisk.filter((uid) => !isKnown(uid));
}
