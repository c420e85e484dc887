/**
 * Whether an exited container is started again (upstream podutil.ContainerShouldRestart with
 * ContainerRestartRules, beta and on in v1.36): a container's own restartPolicy overrides the
 * pod's, and its restartPolicyRules, checked in order, can decide by exit code first. Pure.
 */
import type { Container, ContainerRestartRule, PodSpec } from '../../api/types.js';

/** The rule action that restarts every container of the pod in its sandbox (RestartAllContainersOnContainerExits). */
export const RESTART_ALL = 'RestartAllContainers';

/** Whether `container` has a rule that restarts every container of the pod. */
export function hasRestartAllRule(container: Container): boolean {
  return (container.restartPolicyRules ?? []).some((rule) => rule.action === RESTART_ALL);
}

/** Whether any container of the pod (init or regular: the ones with restart rules) may restart them all. */
export function podUsesRestartAll(spec: Pick<PodSpec, 'initContainers' | 'containers'>): boolean {
  return [...(spec.initContainers ?? []), ...spec.containers].some(hasRestartAllRule);
}

/** The first rule whose exit-code condition matches `exitCode`. */
export function matchingRestartRule(container: Container, exitCode: number): ContainerRestartRule | undefined {
  for (const rule of container.restartPolicyRules ?? []) {
    if (!rule.exitCodes) continue;
    const listed = (rule.exitCodes.values ?? []).includes(exitCode);
    if (rule.exitCodes.operator === 'In' ? listed : rule.exitCodes.operator === 'NotIn' && !listed) return rule;
  }
  return undefined;
}

/** Whether `policy` restarts a container that exited with `exitCode`. */
function policyRestarts(policy: string | undefined, exitCode: number): boolean {
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return exitCode !== 0;
  return true;
}

/** Whether a container that exited with `exitCode` is restarted. */
export function containerShouldRestart(
  container: Container,
  spec: Pick<PodSpec, 'restartPolicy'>,
  exitCode: number,
): boolean {
  if (container.restartPolicy !== undefined) {
    const rule = matchingRestartRule(container, exitCode);
    if (rule) return rule.action === 'Restart';
    return policyRestarts(container.restartPolicy, exitCode);
  }
  return policyRestarts(spec.restartPolicy ?? 'Always', exitCode);
}

/**
 * Whether a container killed by a failed probe is restarted: its own restartPolicy, else the pod's
 * (the rules are not asked: the container did not exit by itself).
 */
export function restartsAfterProbeKill(container: Container, spec: Pick<PodSpec, 'restartPolicy'>): boolean {
  return (container.restartPolicy ?? spec.restartPolicy ?? 'Always') !== 'Never';
}

/** Whether any container of the pod may be restarted after a failure (upstream shouldRestartOnFailure). */
export function podRestartsOnFailure(spec: PodSpec): boolean {
  if ((spec.restartPolicy ?? 'Always') !== 'Never') return true;
  return [...(spec.initContainers ?? []), ...spec.containers].some(
    (c) =>
      (c.restartPolicy !== undefined && c.restartPolicy !== 'Never') ||
      (c.restartPolicyRules ?? []).some((rule) => rule.action === 'Restart' || rule.action === RESTART_ALL),
  );
}
