/**
 * A CSI driver's Identity and Node services over its unix socket (csi.v1), on the lean unary
 * gRPC channel the CRI client uses. Every call has a deadline (upstream's csiTimeout, 2 min;
 * 10 s for the registration-time calls); a failed call rejects with Go's status text
 * ("rpc error: code = NotFound desc = …"), which ends up in FailedMount events as upstream's.
 * The node capabilities are asked once per client (upstream caches them per driver too).
 */
import { serviceMethods } from '../../../cri/proto.js';
import { unaryCaller } from '../../../cri/unary-caller.js';

/** upstream csiTimeout. */
const CSI_TIMEOUT_MS = 2 * 60_000;

/** VolumeCapability (csi.v1), as the kubelet sends it: a filesystem (`mount`) or a raw block device (`block`). */
export interface VolumeCapability {
  mount?: { fs_type: string; mount_flags: string[]; volume_mount_group: string };
  block?: Record<string, never>;
  access_mode: { mode: string };
}

/** NodeGetInfo's answer. */
export interface CsiNodeInfo {
  node_id: string;
  max_volumes_per_node: number;
  accessible_topology: { segments: Record<string, string> } | null;
}

/** What NodeStage and NodePublish take. */
export interface CsiPublish {
  volume_id: string;
  publish_context: Record<string, string>;
  staging_target_path: string;
  volume_capability: VolumeCapability;
  secrets: Record<string, string>;
  volume_context: Record<string, string>;
}

/** One usage figure of NodeGetVolumeStats. */
export interface CsiVolumeUsage {
  available: number;
  total: number;
  used: number;
  unit: 'UNKNOWN' | 'BYTES' | 'INODES';
}

/**
 * A driver's node service. Every method may block up to its deadline; stage/publish and their inverses are idempotent
 * per the CSI spec.
 */
export interface CsiClient {
  nodeGetInfo(): Promise<CsiNodeInfo>;
  /** The node service's RPC capabilities ("STAGE_UNSTAGE_VOLUME", …), asked once. */
  nodeCapabilities(): Promise<ReadonlySet<string>>;
  nodeStageVolume(req: CsiPublish): Promise<void>;
  nodeUnstageVolume(volumeId: string, stagingTargetPath: string): Promise<void>;
  nodePublishVolume(req: CsiPublish & { target_path: string; readonly: boolean }): Promise<void>;
  nodeUnpublishVolume(volumeId: string, targetPath: string): Promise<void>;
  nodeGetVolumeStats(volumeId: string, volumePath: string): Promise<CsiVolumeUsage[]>;
  /** NodeExpandVolume (online expansion): grows the filesystem of a published volume to at least `requiredBytes`. */
  nodeExpandVolume(req: {
    volume_id: string;
    volume_path: string;
    capacity_range: { required_bytes: number; limit_bytes: number };
    staging_target_path: string;
    volume_capability: VolumeCapability;
    secrets: Record<string, string>;
  }): Promise<void>;
  close(): void;
}

/** Sees each call to a driver (csi_operations_seconds). */
export type CsiCallObserver = (o: { method: string; code: string; seconds: number }) => void;

/** Connects (lazily) to the driver at `socketPath`. */
export function createCsiClient(socketPath: string, observe?: CsiCallObserver): CsiClient {
  const node = unaryCaller(socketPath, serviceMethods('csi/v1/csi.proto', 'csi.v1.Node'), CSI_TIMEOUT_MS, observe);

  let caps: Promise<ReadonlySet<string>> | undefined;
  return {
    nodeGetInfo: () => node.call('NodeGetInfo', {}, 10_000),
    nodeCapabilities() {
      caps ??= node
        .call<{ capabilities: { rpc?: { type: string } }[] }>('NodeGetCapabilities', {}, 10_000)
        .then((r) => new Set(r.capabilities.flatMap((c) => (c.rpc ? [c.rpc.type] : []))));
      void caps.catch(() => (caps = undefined));
      return caps;
    },
    nodeStageVolume: async (req) => {
      await node.call('NodeStageVolume', req);
    },
    nodeUnstageVolume: async (volume_id, staging_target_path) => {
      await node.call('NodeUnstageVolume', { volume_id, staging_target_path });
    },
    nodePublishVolume: async (req) => {
      await node.call('NodePublishVolume', req);
    },
    nodeUnpublishVolume: async (volume_id, target_path) => {
      await node.call('NodeUnpublishVolume', { volume_id, target_path });
    },
    nodeGetVolumeStats: async (volume_id, volume_path) =>
      (await node.call<{ usage: CsiVolumeUsage[] }>('NodeGetVolumeStats', { volume_id, volume_path }, 30_000)).usage,
    nodeExpandVolume: async (req) => {
      await node.call('NodeExpandVolume', req);
    },
    close: () => node.close(),
  };
}
