/**
 * The final status of a pod whose worker released it (upstream status manager TerminatePod):
 * a container that never got a terminated state is reported terminated, as upstream cannot tell
 * whether it succeeded — once the pod has initialized, every container; before, the init
 * containers that had tried to start (all but a trailing run of waiting ones, at least the first)
 * — and a pod not yet Succeeded or Failed is Failed. A static pod keeps its phase, as upstream
 * (kubernetes#116484): it may be started again with the same UID. Pure.
 */
import { isTerminalPhase, type ContainerStatus, type Pod, type PodStatus } from '../../api/types.js';
import { isStaticPod } from '../podconfig/types.js';

const UNKNOWN = {
  reason: 'ContainerStatusUnknown',
  message: 'The container could not be located when the pod was terminated',
  exitCode: 137,
};

/**
 * Upstream hasPodInitialized: no init containers, or a regular container left waiting once, or the last init container
 * succeeded.
 */
function hasInitialized(pod: Pod, st: PodStatus): boolean {
  if (!pod.spec.initContainers?.length) return true;
  if ((st.containerStatuses ?? []).some((c) => c.lastState?.terminated || !c.state?.waiting)) return true;
  const last = st.initContainerStatuses?.at(-1);
  return !!last && last.name === pod.spec.initContainers.at(-1)!.name && last.state?.terminated?.exitCode === 0;
}

/** Upstream initializedContainers: all but the trailing run of containers that never started (at least the first). */
function triedToStart(cs: ContainerStatus[]): number {
  for (let i = cs.length - 1; i >= 0; i--) if (!cs[i].state?.waiting || cs[i].lastState?.terminated) return i + 1;
  return Math.min(cs.length, 1);
}

const terminated = (c: ContainerStatus): ContainerStatus =>
  c.state?.terminated ? c : { ...c, state: { terminated: { ...UNKNOWN } } };

/** The pod's final status from its last generated one. */
export function terminatePodStatus(pod: Pod, st: PodStatus): PodStatus {
  const out: PodStatus = { ...st };
  if (hasInitialized(pod, st) && st.containerStatuses) out.containerStatuses = st.containerStatuses.map(terminated);
  if (st.initContainerStatuses) {
    const n = triedToStart(st.initContainerStatuses);
    out.initContainerStatuses = st.initContainerStatuses.map((c, i) => (i < n ? terminated(c) : c));
  }
  if (!isStaticPod(pod) && !isTerminalPhase(out.phase)) out.phase = 'Failed';
  return out;
}
