/**
 * The status of a container the runtime has no instance of, from the pod's previous status
 * (upstream convertToAPIContainerStatuses): after a kubelet restart the previous status is the
 * apiserver's, so what the runtime lost (a container removed, a runtime's state wiped) is not
 * reported as a container that never ran.
 *  - previously terminated: that status stays as it was;
 *  - otherwise its restart count and last state carry over;
 *  - previously running and now only the default waiting state: it ended unseen — its last state
 *    is terminated ContainerStatusUnknown (137), and unless the pod is being deleted it counts as
 *    a restart.
 * And an init container (not a sidecar) the runtime no longer has, in a pod whose regular containers were created:
 * it ran and succeeded, whatever the default waiting state says (upstream v1.36, kubernetes/kubernetes#131317: a
 * static pod, whose status has no apiserver copy, stayed Pending and `Init:0/1` after its init container was removed
 * and the kubelet restarted).
 * Pure.
 */
import type { ContainerStatus, Pod } from '../../api/types.js';

const VANISHED = {
  reason: 'ContainerStatusUnknown',
  message: 'The container could not be located when the pod was deleted.  The container used to be Running',
  exitCode: 137,
};

/** `st` (the default waiting status, `defaultWaiting` its reason) with what `old` says of the container. */
export function vanishedContainerStatus(
  pod: Pod,
  st: ContainerStatus,
  old: ContainerStatus | undefined,
  defaultWaiting: string,
): ContainerStatus {
  if (!old) return st;
  if (old.state?.terminated) return { ...old, lastState: old.lastState ?? {} };
  const out: ContainerStatus = { ...st, restartCount: old.restartCount ?? 0, lastState: old.lastState ?? {} };
  if (!old.state?.running || st.state.waiting?.reason !== defaultWaiting || out.lastState.terminated) return out;
  out.lastState = { terminated: { ...VANISHED } };
  if (!pod.metadata.deletionTimestamp) out.restartCount++;
  return out;
}

/** The terminated state upstream gives an init container it can no longer find in a pod past its init containers. */
const LOST_INIT_CONTAINER = {
  reason: 'Completed',
  message:
    'Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally',
  exitCode: 0,
};

/** `st` (still waiting: nothing says how the init container ended) as the init container that completed. */
export function lostInitContainerStatus(st: ContainerStatus): ContainerStatus {
  // Ready, as upstream's prober manager makes every init container that exited 0.
  return { ...st, state: { terminated: { ...LOST_INIT_CONTAINER } }, ready: true };
}
