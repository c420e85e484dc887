/**
 * Online expansion of a published CSI PersistentVolume (upstream's node expander, run on each pod
 * sync of a set-up volume), with RecoverVolumeExpansionFailure (beta and on in 1.32): once the
 * controller side has grown the volume — the PV's capacity is above the claim's status capacity —
 * and the resizer has given the node its turn (`allocatedResourceStatuses.storage`
 * NodeResizePending, or NodeResizeInProgress from an earlier try), the claim is marked
 * NodeResizeInProgress, then NodeExpandVolume (when the driver has EXPAND_VOLUME; without it there
 * is nothing to do on the node), then the claim's status takes the new capacity, loses its
 * resize conditions and its storage status (upstream MarkFSResizeFinished), with
 * `FileSystemResizeSuccessful` events on the pod and the claim. A failure is a
 * `FileSystemResizeFailed` event; a final one also a `NodeResizeError` condition on the claim, and
 * an infeasible one (InvalidArgument, OutOfRange, NotFound) NodeResizeInfeasible, which is not
 * tried again; FailedPrecondition (the volume is in use) is not tried again while it is mounted.
 * Other failures are tried again on the next sync.
 */
import { rfc3339 } from '../../../lib/time.js';
import type { Pod } from '../../../api/types.js';
import { parseQuantity } from '../../../api/quantity.js';
import { messageOf } from '../../../lib/errors.js';
import { podRef, type EventSink } from '../../events/recorder.js';
import type { VolumeHost } from '../types.js';
import type { CsiClient, VolumeCapability } from './csi-client.js';
import { GoStatusError, isFinalError } from '../../../cri/unary-caller.js';
import { GrpcCode } from '../../../cri/grpc-status.js';

interface Claim {
  metadata?: { uid?: string };
  status?: {
    capacity?: { storage?: string };
    allocatedResourceStatuses?: Record<string, string>;
    conditions?: { type: string; status?: string; lastTransitionTime?: string; message?: string }[];
  };
}
interface Pv {
  spec?: { capacity?: { storage?: string }; csi?: { nodeExpandSecretRef?: { name: string; namespace: string } } };
}

/** The claim's resize conditions, which a finished node expansion removes (upstream MergeResizeConditionOnPVC). */
const RESIZE_CONDITIONS = new Set(['Resizing', 'FileSystemResizePending', 'ControllerResizeError', 'NodeResizeError']);
/** allocatedResourceStatuses values that give the node its turn (upstream runPreCheck). */
const NODE_TURN = new Set(['NodeResizePending', 'NodeResizeInProgress']);
/** CSI codes upstream takes as infeasible (isInfeasibleError): the claim is marked and the node does not try again. */
const INFEASIBLE: ReadonlySet<number> = new Set([GrpcCode.INVALID_ARGUMENT, GrpcCode.OUT_OF_RANGE, GrpcCode.NOT_FOUND]);

/**
 * Whether the node must expand (pure): the PV is bigger than the claim says and the resizer has
 * given the node its turn. A claim without a storage status is left alone, as upstream ("recovery
 * features will only work for newer version of resize controller"); so is an infeasible one.
 */
export function needsNodeExpansion(pv: Pv, claim: Claim): { bytes: number; capacity: string } | undefined {
  const capacity = pv.spec?.capacity?.storage;
  const want = parseQuantity(capacity);
  const have = parseQuantity(claim.status?.capacity?.storage);
  if (!capacity || want === undefined || have === undefined || want <= have) return undefined;
  const allocated = claim.status?.allocatedResourceStatuses?.storage;
  if (allocated === undefined || !NODE_TURN.has(allocated)) return undefined;
  return { bytes: want, capacity };
}

/**
 * The claim status after a failed NodeExpandVolume (upstream MarkNodeExpansionInfeasible /
 * MarkNodeExpansionFailedCondition; pure): a `NodeResizeError` condition with the error, and for
 * an infeasible one the NodeResizeInfeasible storage status. Undefined: the claim is not marked
 * (the call may still finish in the driver).
 */
export function failedExpansionStatus(
  status: NonNullable<Claim['status']>,
  err: unknown,
  nowIso: string,
): Pick<NonNullable<Claim['status']>, 'conditions' | 'allocatedResourceStatuses'> | undefined {
  if (!isFinalError(err)) return undefined;
  const infeasible = err instanceof GoStatusError && INFEASIBLE.has(err.code);
  const text = infeasible
    ? `Expander.NodeExpand failed to expand the volume ${messageOf(err)}`
    : `Expander.NodeExpand failed to expand the volume : ${messageOf(err)}`;
  // MergeResizeConditionOnPVC: a NodeResizeError already True stays as it is (its time and first message).
  const current = (status.conditions ?? []).find((c) => c.type === 'NodeResizeError' && c.status === 'True');
  const condition = current ?? {
    type: 'NodeResizeError',
    status: 'True',
    lastTransitionTime: nowIso,
    message: `failed to expand pvc with ${text}`,
  };
  const others = (status.conditions ?? []).filter((c) => c.type !== 'NodeResizeError');
  return {
    conditions: [...others, condition],
    ...(infeasible
      ? { allocatedResourceStatuses: { ...status.allocatedResourceStatuses, storage: 'NodeResizeInfeasible' } }
      : {}),
  };
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
  /**
   * The capacity this volume was last expanded to, and whether the driver said it is in use (kept by the caller across
   * syncs).
   */
  done?: { capacity?: string; inUse?: boolean };
  /** The time, for the claim's conditions. */
  now?: () => Date;
}

/**
 * Expands the volume when its claim asks for it; resolves when done or not needed, rejects on failure (after its
 * event).
 */
export async function expandIfNeeded(i: ExpandInput): Promise<void> {
  if (!i.host.patchClaimStatus) return;
  // The objects as cached for the pod's volumes (5 s): a sync soon after a finished expansion may
  // still see the old claim, so what was done last is remembered (`done`).
  const [cachedClaim, pv] = await Promise.all([
    i.host.getObject<Claim>('persistentvolumeclaims', i.claim.namespace, i.claim.name),
    i.host.getPersistentVolume<Pv>(i.pvName),
  ]);
  if (!cachedClaim || !pv) return;
  const cached = needsNodeExpansion(pv, cachedClaim);
  if (!cached || i.done?.capacity === cached.capacity || i.done?.inUse) return;
  // The claim as it is now (upstream GETs it for every expansion): the cache may not have this node's last marks yet.
  const claim = await i.host.getClusterObject<Claim>(
    `/api/v1/namespaces/${encodeURIComponent(i.claim.namespace)}/persistentvolumeclaims/${encodeURIComponent(i.claim.name)}`,
    { fresh: true },
  );
  const need = claim && needsNodeExpansion(pv, claim);
  if (!claim || !need) return;
  const claimRef = {
    kind: 'PersistentVolumeClaim',
    apiVersion: 'v1',
    namespace: i.claim.namespace,
    name: i.claim.name,
    uid: claim.metadata?.uid,
  };
  const status = claim.status ?? {};
  // upstream MarkNodeExpansionInProgress.
  if (status.allocatedResourceStatuses?.storage !== 'NodeResizeInProgress')
    await i.host.patchClaimStatus(i.claim.namespace, i.claim.name, {
      status: { allocatedResourceStatuses: { ...status.allocatedResourceStatuses, storage: 'NodeResizeInProgress' } },
    });
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
    const marks = failedExpansionStatus(status, err, rfc3339((i.now?.() ?? new Date()).getTime()));
    const changed =
      marks &&
      (JSON.stringify(marks.conditions) !== JSON.stringify(status.conditions) ||
        (marks.allocatedResourceStatuses !== undefined &&
          marks.allocatedResourceStatuses.storage !== status.allocatedResourceStatuses?.storage));
    if (changed)
      await i.host.patchClaimStatus(i.claim.namespace, i.claim.name, { status: marks }).catch(() => undefined);
    // FailedPrecondition: the volume cannot grow while in use; that must not hold the pod back (upstream
    // MarkForInUseExpansionError).
    if (err instanceof GoStatusError && err.code === GrpcCode.FAILED_PRECONDITION) {
      if (i.done) i.done.inUse = true;
      return;
    }
    const text = `MountVolume.NodeExpandVolume failed for volume "${i.pvName}" : ${messageOf(err)}`;
    i.events?.record(podRef(i.pod), 'Warning', 'FileSystemResizeFailed', text);
    throw new Error(text, { cause: err });
  }
  if (i.done) i.done.capacity = need.capacity;
  const text = `MountVolume.NodeExpandVolume succeeded for volume "${i.pvName}" ${i.nodeName}`;
  i.events?.record(podRef(i.pod), 'Normal', 'FileSystemResizeSuccessful', text);
  i.events?.record(claimRef, 'Normal', 'FileSystemResizeSuccessful', text);
}
