/**
 * Online expansion of a published CSI PersistentVolume (upstream's node expander, run on each pod
 * sync of a set-up volume): once the controller side has grown the volume — the PV's capacity is
 * above the claim's status capacity, and the claim's `allocatedResourceStatuses` (when set) says
 * the node's turn has come — NodeExpandVolume (when the driver has EXPAND_VOLUME; without it there
 * is nothing to do on the node), then the claim's status takes the new capacity and loses its
 * resize conditions (upstream MarkFSResizeFinished), with `FileSystemResizeSuccessful` events on
 * the pod and the claim; a failure is a `FileSystemResizeFailed` event and is tried again on the
 * next sync.
 */
import type { Pod } from '../../../api/types.js';
import { parseQuantity } from '../../../api/quantity.js';
import { messageOf } from '../../../lib/errors.js';
import { podRef, type EventSink } from '../../events/recorder.js';
import type { VolumeHost } from '../types.js';
import type { CsiClient, VolumeCapability } from './csi-client.js';

interface Claim {
  metadata?: { uid?: string };
  status?: { capacity?: { storage?: string }; allocatedResourceStatuses?: Record<string, string>; conditions?: { type: string }[] };
}
interface Pv {
  spec?: { capacity?: { storage?: string }; csi?: { nodeExpandSecretRef?: { name: string; namespace: string } } };
}

/** The claim's resize conditions, which a finished node expansion removes (upstream MergeResizeConditionOnPVC). */
const RESIZE_CONDITIONS = new Set(['Resizing', 'FileSystemResizePending', 'ControllerResizeError', 'NodeResizeError']);
/** allocatedResourceStatuses values that leave the next step to the node. */
const NODE_TURN = new Set(['NodeResizePending', 'NodeResizeInProgress', 'NodeResizeFailed']);

/** Whether the node must expand (pure): the PV is bigger than the claim says, and the controller is done. */
export function needsNodeExpansion(pv: Pv, claim: Claim): { bytes: number; capacity: string } | undefined {
  const capacity = pv.spec?.capacity?.storage;
  const want = parseQuantity(capacity);
  const have = parseQuantity(claim.status?.capacity?.storage);
  if (!capacity || want === undefined || have === undefined || want <= have) return undefined;
  const allocated = claim.status?.allocatedResourceStatuses?.storage;
  if (allocated !== undefined && !NODE_TURN.has(allocated)) return undefined;
  return { bytes: want, capacity };
}

/** What one check needs. */
export interface ExpandInput {
  host: VolumeHost;
  client: CsiClient;
  canExpand: boolean;
  pod: Pod;
  claim: { name: string; namespace: string };
  pvName: string;
  volumeHandle: string;
  target: string;
  staging: string;
  capability: VolumeCapability;
  nodeName: string;
  events?: EventSink;
  secrets(ref: { name: string; namespace: string }): Promise<Record<string, string>>;
  /** The capacity this volume was last expanded to (kept by the caller across syncs). */
  done?: { capacity?: string };
}

/** Expands the volume when its claim asks for it; resolves when done or not needed, rejects on failure (after its event). */
export async function expandIfNeeded(i: ExpandInput): Promise<void> {
  if (!i.host.patchClaimStatus) return;
  // The objects as cached for the pod's volumes (5 s): a sync soon after a finished expansion may
  // still see the old claim, so what was done last is remembered (`done`).
  const [claim, pv] = await Promise.all([
    i.host.getObject<Claim>('persistentvolumeclaims', i.claim.namespace, i.claim.name),
    i.host.getPersistentVolume<Pv>(i.pvName),
  ]);
  if (!claim || !pv) return;
  const need = needsNodeExpansion(pv, claim);
  if (!need || i.done?.capacity === need.capacity) return;
  const claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: i.claim.namespace, name: i.claim.name, uid: claim.metadata?.uid };
  try {
    if (i.canExpand) {
      const ref = pv.spec?.csi?.nodeExpandSecretRef;
      await i.client.nodeExpandVolume({
        volume_id: i.volumeHandle,
        volume_path: i.target,
        capacity_range: { required_bytes: need.bytes, limit_bytes: 0 },
        staging_target_path: i.staging,
        volume_capability: i.capability,
        secrets: ref ? await i.secrets(ref) : {},
      });
    }
    const allocated = { ...claim.status?.allocatedResourceStatuses };
    delete allocated.storage;
    await i.host.patchClaimStatus(i.claim.namespace, i.claim.name, {
      status: {
        capacity: { ...claim.status?.capacity, storage: need.capacity },
        conditions: (claim.status?.conditions ?? []).filter((c) => !RESIZE_CONDITIONS.has(c.type)),
        allocatedResourceStatuses: Object.keys(allocated).length ? allocated : null,
      },
    });
  } catch (err) {
    const text = `MountVolume.NodeExpandVolume failed for volume "${i.pvName}" : ${messageOf(err)}`;
    i.events?.record(podRef(i.pod), 'Warning', 'FileSystemResizeFailed', text);
    throw new Error(text, { cause: err });
  }
  if (i.done) i.done.capacity = need.capacity;
  const text = `MountVolume.NodeExpandVolume succeeded for volume "${i.pvName}" ${i.nodeName}`;
  i.events?.record(podRef(i.pod), 'Normal', 'FileSystemResizeSuccessful', text);
  i.events?.record(claimRef, 'Normal', 'FileSystemResizeSuccessful', text);
}
