/** The API objects the CSI plugin reads, reduced to the fields it reads. */

/** storage.k8s.io/v1 CSIDriver, the fields the kubelet reads. */
export interface CsiDriverObj {
  spec?: {
    attachRequired?: boolean;
    podInfoOnMount?: boolean;
    volumeLifecycleModes?: string[];
    fsGroupPolicy?: string;
    tokenRequests?: { audience?: string; expirationSeconds?: number }[];
    requiresRepublish?: boolean;
    /** The tokens go in NodePublishVolume's secrets, not its volume context (CSIServiceAccountTokenSecrets). */
    serviceAccountTokenInSecrets?: boolean;
    /** How often the node's volume limit is asked again (MutableCSINodeAllocatableCount). */
    nodeAllocatableUpdatePeriodSeconds?: number;
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
/** core/v1 CSIVolumeSource (an inline volume). */
export interface CsiInlineSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: { name: string };
}
