/**
 * Which pods are active — hold the node's resources, so admission counts them (upstream
 * filterOutInactivePods): every pod of the pod manager except those whose worker has stopped
 * them, and those finished in the API (Succeeded/Failed) unless they are still stopping. A pod
 * being deleted keeps its cpu, memory and host ports until its containers are gone. Pure.
 */
import { isTerminalPhase, type Pod } from '../../api/types.js';
import type { WorkerState } from '../sync/pod-workers.js';

/** True when the pod's (API) status is Succeeded or Failed. */
export const hasTerminalPhase = (p: Pod) => isTerminalPhase(p.status?.phase);

/** Whether `pod`, whose worker is in `state` (undefined: none yet), is active. */
export function isActivePod(pod: Pod, state: WorkerState | undefined): boolean {
  if (state === 'terminated') return false;
  return !hasTerminalPhase(pod) || state === 'terminating';
}
