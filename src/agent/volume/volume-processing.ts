/**
 * How a pod volume's set-up fails, as upstream tells it.
 *
 * A pod volume the kubelet cannot even resolve to what to mount (upstream's desired-state populator: a claim that is
 * not bound or being deleted, a PersistentVolume not found, an ephemeral volume's claim the pod does not
 * own). Upstream does not try to mount it: WaitForAttachAndMount fails at once, and syncPod reports it with the
 * waiting pod's lists (FailedMount "Unable to attach or mount volumes: … failed to process volumes=[data]: …").
 */
export class VolumeProcessingError extends Error {}

/** Go's %v of a string slice. */
export const goList = (names: readonly string[]) => `[${names.join(' ')}]`;

/**
 * What upstream's syncPod reports when a pod's volumes are not all set up (WaitForAttachAndMount's error after its
 * timeout, `cause` "context deadline exceeded", or at once with the volumes it could not process and why). Pure.
 */
export function unableToMountMessage(o: {
  unmounted: readonly string[];
  unattached: readonly string[];
  notProcessed: readonly string[];
  cause: string;
}): string {
  const list = (names: readonly string[]) => goList([...names].sort());
  return (
    `Unable to attach or mount volumes: unmounted volumes=${list(o.unmounted)}, ` +
    `unattached volumes=${list(o.unattached)}, failed to process volumes=${list(o.notProcessed)}: ${o.cause}`
  );
}

/**
 * Which of upstream's mount operations failed, for its event (`MountVolume.<operation> failed for volume "…" : …`):
 * a staging (`MountDevice`) or the set-up itself (`SetUp`, any other error); `WaitForAttach` is an AttachError's.
 */
export class VolumeOperationError extends Error {
  constructor(
    readonly operation: 'MountDevice' | 'SetUp',
    message: string,
  ) {
    super(message);
  }
}

/**
 * A failure of the volume a claim resolved to: upstream names it by its spec, the PersistentVolume's name, not the
 * pod's volume name. `cause` is the failure.
 */
export class PersistentVolumeError extends Error {
  constructor(
    readonly persistentVolumeName: string,
    readonly failure: unknown,
  ) {
    super(failure instanceof Error ? failure.message : String(failure), { cause: failure });
  }
}
