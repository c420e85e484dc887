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
 * The step of a volume's set-up that failed: its staging on the node (`stage`), its publication for the pod
 * (`publish`), or, for a raw block device, its binding into the pod's map (`map`). Upstream names the operation after
 * the step and after whether the volume is mounted or mapped (volumeFailure).
 */
export type VolumeStep = 'stage' | 'publish' | 'map';

/** A failure of one step of a volume's set-up; any other error is a failure of its set-up as a whole. */
export class VolumeOperationError extends Error {
  constructor(
    readonly step: VolumeStep,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Upstream's words for a failed set-up step (operation_generator.go): the operation its event names (`<operation>
 * failed for volume "…" : …`) and the event's reason. A volume the pod's containers use as a device (`volumeDevices`)
 * is mapped: `MapVolume.*` operations, reason FailedMapVolume; any other is mounted: `MountVolume.*`, FailedMount.
 * `attach` is the wait for the volume's attachment; undefined, a failure of no named step.
 */
export function volumeFailure(
  step: VolumeStep | 'attach' | undefined,
  mapped: boolean,
): { operation: string; reason: 'FailedMount' | 'FailedMapVolume' } {
  if (!mapped) {
    const operation = step === 'attach' ? 'WaitForAttach' : step === 'stage' ? 'MountDevice' : 'SetUp';
    return { operation: `MountVolume.${operation}`, reason: 'FailedMount' };
  }
  const operation =
    step === 'attach'
      ? 'WaitForAttach'
      : step === 'publish'
        ? 'MapPodDevice'
        : step === 'map'
          ? 'MapBlockVolume'
          : 'SetUpDevice';
  return { operation: `MapVolume.${operation}`, reason: 'FailedMapVolume' };
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
