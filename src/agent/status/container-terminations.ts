/**
 * The container terminations a new pod status shows that the previous one did not: what
 * `kubelet_terminated_containers_total{container_type,exit_code,reason}` counts (upstream v1.36,
 * kubernetes/kubernetes#137453, counted by its status manager so that each termination is counted once).
 *
 * A termination is known by its container ID. Both the state and the last state are read, so a
 * container that ended and was restarted between two statuses is still counted once; the previous
 * status is the apiserver's after a kubelet restart, so nothing already reported counts again.
 */
import type { ContainerStatus, PodStatus } from '../../api/types.js';

/** One termination's labels. */
export interface ContainerTermination {
  containerType: 'container' | 'init_container' | 'ephemeral_container';
  exitCode: number;
  reason: string;
}

type Terminated = NonNullable<ContainerStatus['state']['terminated']>;

const LISTS = [
  ['containerStatuses', 'container'],
  ['initContainerStatuses', 'init_container'],
  ['ephemeralContainerStatuses', 'ephemeral_container'],
] as const;

/** A termination's identity: its container's ID, or (the kubelet's own "unknown" status has none) its name. */
function identity(name: string, terminated: Terminated): string {
  return terminated.containerID ? `id:${terminated.containerID}` : `name:${name}`;
}

/** The terminations `previous` already showed, by identity. */
function knownTerminations(previous: PodStatus | undefined): Set<string> {
  const known = new Set<string>();
  for (const [list] of LISTS)
    for (const status of previous?.[list] ?? [])
      for (const terminated of [status.state?.terminated, status.lastState?.terminated])
        if (terminated) known.add(identity(status.name, terminated));
  return known;
}

/** The terminations in `next` that `previous` did not show (pure). */
export function newContainerTerminations(previous: PodStatus | undefined, next: PodStatus): ContainerTermination[] {
  const known = knownTerminations(previous);
  const found: ContainerTermination[] = [];
  for (const [list, containerType] of LISTS)
    for (const status of next[list] ?? [])
      for (const terminated of [status.lastState?.terminated, status.state?.terminated]) {
        if (!terminated) continue;
        const key = identity(status.name, terminated);
        if (known.has(key)) continue;
        known.add(key);
        found.push({ containerType, exitCode: terminated.exitCode, reason: terminated.reason ?? '' });
      }
  return found;
}
