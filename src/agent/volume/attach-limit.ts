/**
 * A pod refused because the node has no attachment left for its volume (upstream's VolumeAttachLimitExceededError,
 * MutableCSINodeAllocatableCount): when a volume's VolumeAttachment says the attach failed with `ResourceExhausted`
 * (the external-attacher records the driver's gRPC code) and its driver keeps the node's volume limit current
 * (`nodeAllocatableUpdatePeriodSeconds`), a pod still waiting for it after upstream's attach-and-mount wait fails as
 * rejected (`VolumeAttachmentLimitExceeded`) instead of waiting for good; the scheduler, which reads the limit the
 * kubelet now reports, places it elsewhere.
 */
import { goList, unableToMountMessage } from './volume-processing.js';

/** The rejection's reason (upstream volumemanager.VolumeAttachmentLimitExceededReason). */
export const VOLUME_ATTACHMENT_LIMIT_EXCEEDED = 'VolumeAttachmentLimitExceeded';

/** How long a pod waits for its volumes before an exhausted attachment rejects it (podAttachAndMountTimeout). */
export const POD_ATTACH_AND_MOUNT_TIMEOUT_MS = 123_000;

/** gRPC's ResourceExhausted, as a VolumeAttachment's `attachError.errorCode` carries it. */
export const RESOURCE_EXHAUSTED = 8;

/** A volume not attached to the node; `exhausted` when its attachment ran out of the node's volume slots. */
export class AttachError extends Error {
  constructor(
    message: string,
    readonly exhausted: boolean,
  ) {
    super(message);
  }
}

/**
 * What upstream's syncPod reports (a FailedMount event) each time WaitForAttachAndMount gives up on a pod's volumes:
 * its message once the pod has waited the timeout since `sinceMs` (its wait began, or the last report), else
 * undefined. `unattached` are the attachable volumes not attached. Pure.
 */
export function mountWaitTimeout(o: {
  unmounted: readonly string[];
  unattached: readonly string[];
  sinceMs: number;
  nowMs: number;
}): string | undefined {
  if (o.nowMs - o.sinceMs < POD_ATTACH_AND_MOUNT_TIMEOUT_MS) return undefined;
  return unableToMountMessage({ ...o, notProcessed: [], cause: 'context deadline exceeded' });
}

/**
 * The rejection message for a pod waiting since `waitingSinceMs` for `unmounted` volumes, of which `unattached` are not
 * attached (name → exhausted), or undefined while it may go on waiting (upstream WaitForAttachAndMount after its
 * timeout). Pure.
 */
export function attachLimitRejection(o: {
  unmounted: readonly string[];
  unattached: ReadonlyMap<string, boolean>;
  waitingSinceMs: number;
  nowMs: number;
}): string | undefined {
  if (o.nowMs - o.waitingSinceMs < POD_ATTACH_AND_MOUNT_TIMEOUT_MS) return undefined;
  if (![...o.unattached.values()].some((exhausted) => exhausted)) return undefined;
  const unmounted = goList([...o.unmounted].sort());
  const unattached = goList([...o.unattached.keys()].sort());
  return (
    `Node has reached its volume attachment limit, rejecting pod. unmounted volumes=${unmounted}, ` +
    `unattached volumes=${unattached}, failed to process volumes=[]: context deadline exceeded`
  );
}
