/**
 * The volume plugin seam (upstream pkg/volume's VolumePlugin + Mounter, reduced to what a kubelet
 * without attach/detach needs). A plugin turns one pod volume into a host path that containers
 * bind-mount. Contract:
 * - `setUp` is idempotent and may block on I/O and the apiserver; it throws an Error whose
 *   message is upstream's (it becomes `MountVolume.SetUp failed for volume "x" : <message>`).
 * - `setUp` of a plugin with `remountEachSync` is run again on every pod sync, so content from
 *   the API (configMap, secret, downward API, token) follows changes; it writes only on change.
 * - Teardown is generic (volume-manager.ts): unmount what is mounted under the pod's volume
 *   directory, then remove it. Plugins whose path lies outside it (hostPath, PVCs) leave nothing.
 *   A plugin with `tearDown` (CSI) first releases each of its volume directories itself.
 */
import type { Pod } from '../../api/types.js';
import type { DownwardContext } from './payload.js';
import type { ImageSpec } from '../../cri/types-common.js';
import type { Logger } from '../../lib/logger.js';
import type { EventSink } from '../events/recorder.js';
import type { TrustAnchors } from '../objects/cluster-trust-bundles.js';
import type { PodCertificates } from '../certificate/pod-certificates.js';

/** core/v1 Volume (the sources the plugins read; others pass through untyped). */
export interface Volume {
  name: string;
  [source: string]: unknown;
}

/** What a plugin may read besides the pod and the volume. */
export interface VolumeHost {
  /** A namespaced core/v1 object (null = not found): ConfigMaps and Secrets through the object managers. */
  getObject<T>(
    resource: 'configmaps' | 'secrets' | 'persistentvolumeclaims',
    ns: string,
    name: string,
  ): Promise<T | null>;
  /** A PersistentVolume (null = not found). */
  getPersistentVolume<T>(name: string): Promise<T | null>;
  /**
   * An object by API path (null = not found): cached as getObject, or `fresh` from the apiserver (a VolumeAttachment's
   * status).
   */
  getClusterObject<T>(path: string, o?: { fresh?: boolean }): Promise<T | null>;
  /** Merge-patches a claim's status (a finished node expansion); absent without an apiserver. */
  patchClaimStatus?(namespace: string, name: string, patch: object): Promise<void>;
  /** A service-account token through the TokenRequest API, and when it expires (RFC 3339). */
  getToken(o: {
    namespace: string;
    serviceAccount: string;
    audiences: string[];
    expirationSeconds: number;
    pod: { name: string; uid: string };
  }): Promise<{ token: string; expirationTimestamp: string }>;
  /** Whether the apiserver objects above are available at all (false in standalone mode). */
  hasApiserver: boolean;
  /** ClusterTrustBundles' certificates for projected `clusterTrustBundle` sources (absent: as upstream's noop). */
  trustAnchors?: TrustAnchors;
  /** Pods' certificates for projected `podCertificate` sources (absent: as upstream's no-op manager). */
  podCertificates?: PodCertificates;
  /** Node facts for the downward API. */
  downward: DownwardContext;
  /** True when the kubelet runs as root (tmpfs mounts, ownership). */
  isRoot: boolean;
  /** The pods' events (a long fsGroup ownership change is reported there). */
  events?: EventSink;
  logger?: Logger;
  /** The node's allocatable memory in bytes (the size of a memory-backed emptyDir at most), when known. */
  nodeAllocatableMemoryBytes?: () => number | undefined;
}

/** What `setUp` gets. */
export interface SetUpContext {
  pod: Pod;
  volume: Volume;
  /** `<root-dir>/pods/<uid>/volumes/<plugin dir>/<volume name>` (created by the plugin when it uses it). */
  dir: string;
  /**
   * `<root-dir>/pods/<uid>/volumes`: a plugin whose volume directory is named otherwise (a CSI PV's is
   * `kubernetes.io~csi/<PV name>`) makes it here.
   */
  volumesDir: string;
  /** pod.spec.securityContext.fsGroup. */
  fsGroup?: number;
  host: VolumeHost;
  /** The volume is set up for this pod already: this is a refresh (upstream's remount), not its first set-up. */
  remount?: boolean;
}

/** A set-up volume: where containers find it. */
export interface MountedVolume {
  /** Host path to bind-mount (or under which subPaths are resolved). */
  path: string;
  /** Mounted read-only into every container (configMap, secret, downwardAPI, projected, a read-only PVC). */
  readOnly: boolean;
  /** The volume's plugin directory name, e.g. `kubernetes.io~configmap`. */
  plugin: string;
  /**
   * A raw block volume (volumeMode: Block): the device node on the host that containers get as `volumeDevices` (`path`
   * is not mountable then).
   */
  devicePath?: string;
  /**
   * Upstream's full plugin name for the metrics when the directory's is not it: `kubernetes.io/csi:<driver>`, a claim's
   * PV plugin (`kubernetes.io/local-volume`, `kubernetes.io/host-path`).
   */
  pluginName?: string;
  /**
   * Its directory under the pod's volumes directory when that is not `<plugin>/<volume name>` (a CSI PV:
   * `kubernetes.io~csi/<PV name>`).
   */
  dir?: string;
  /**
   * The runtime relabels it for the container's SELinux label when it mounts it (upstream: the
   * plugin's Managed and SELinuxRelabel attributes: emptyDir, configMap, secret, downwardAPI,
   * projected, a writable local PV; never a hostPath). No effect on a host without SELinux.
   */
  seLinuxRelabel?: boolean;
  /**
   * How its usage is measured for the stats (upstream's MetricsProvider): `du`, the files under it
   * and its filesystem's figures (emptyDir and the volumes made of files); `statfs`, its
   * filesystem's figures only (a local PV); absent, not at all (a hostPath, upstream's MetricsNil).
   */
  metrics?: 'du' | 'statfs' | VolumeMeasure;
  /** Counted in the pod's ephemeral storage (upstream IsLocalEphemeralVolume: an emptyDir on disk, a configMap). */
  localEphemeral?: boolean;
  /**
   * Called on every later pod sync of the set-up volume (a CSI PV's online expansion); records its own events, may
   * block.
   */
  onSync?: () => Promise<void>;
  /**
   * Set up again on every pod sync although its plugin is not `remountEachSync` (a CSI driver with
   * `requiresRepublish`).
   */
  remountEachSync?: boolean;
  /**
   * An attachable volume's unique name (`kubernetes.io/csi/<driver>^<handle>`): in node.status.volumesInUse while set
   * up, so the attach/detach controller does not detach it under the pod.
   */
  uniqueName?: string;
  /** The claim of a persistentVolumeClaim volume: the stats' pvcRef and the kubelet_volume_stats_* labels. */
  pvcRef?: { name: string; namespace: string };
  /**
   * An image volume (`volumes[].image`): the image the runtime mounts read-only at the container's path; `path` is
   * empty (the kubelet mounts nothing, as upstream's volume manager leaves these alone).
   */
  image?: ImageSpec;
}

/** A filesystem's or a volume's usage figures (names as upstream's FsStats). */
export interface FsUsage {
  usedBytes: number;
  inodesUsed: number;
  capacityBytes: number;
  availableBytes: number;
  inodes: number;
  inodesFree: number;
}

/** A volume's figures as its driver reports them (a CSI driver's NodeGetVolumeStats). */
export type VolumeMeasure = () => Promise<FsUsage>;

/** One volume plugin. */
export interface VolumePlugin {
  /** Upstream's escaped plugin name, used as the directory name (`kubernetes.io~configmap`). */
  readonly dirName: string;
  /** The pod-spec field this plugin handles (`configMap`, `emptyDir`…). */
  readonly field: string;
  readonly remountEachSync: boolean;
  setUp(ctx: SetUpContext): Promise<MountedVolume>;
  /**
   * For plugins whose volumes a driver must release (CSI): called for each directory under
   * `<pod volumes dir>/<dirName>/` before the generic unmount and removal; idempotent; throws to
   * keep the pod directory (teardown is retried by housekeeping).
   */
  tearDown?(dir: string): Promise<void>;
  /**
   * Housekeeping (every 2 s, not awaited): releases what no pod uses any more (CSI volumes still staged); one pass at a
   * time.
   */
  releaseUnused?(): Promise<void>;
  /**
   * Called once the volumes of the pod whose volume directory is `volumesDir` are torn down (the pod is gone or
   * terminated): whatever the plugin still keeps for that pod's volumes in memory goes.
   */
  forgetPod?(volumesDir: string): void;
}
