/**
 * The labels and annotations the Go kubelet puts on CRI sandboxes and containers. They are how
 * the kubelet recognises its pods in the runtime after a restart (no local database).
 */
import type { Container, Pod } from '../../api/types.js';
import { containerHash } from './container-hash.js';

export const PodNameLabel = 'io.kubernetes.pod.name';
export const PodNamespaceLabel = 'io.kubernetes.pod.namespace';
export const PodUidLabel = 'io.kubernetes.pod.uid';
export const ContainerNameLabel = 'io.kubernetes.container.name';
export const ContainerHashAnnotation = 'io.kubernetes.container.hash';
export const ContainerRestartCountAnnotation = 'io.kubernetes.container.restartCount';
export const ContainerTerminationMessagePathAnnotation = 'io.kubernetes.container.terminationMessagePath';
export const ContainerTerminationMessagePolicyAnnotation = 'io.kubernetes.container.terminationMessagePolicy';
export const PodTerminationGracePeriodAnnotation = 'io.kubernetes.pod.terminationGracePeriod';
export const ContainerPortsAnnotation = 'io.kubernetes.container.ports';

/** Sandbox labels: the pod's labels plus the kubelet's identity labels. */
export function sandboxLabels(pod: Pod): Record<string, string> {
  return { ...pod.metadata.labels, [PodNameLabel]: pod.metadata.name!, [PodNamespaceLabel]: pod.metadata.namespace!, [PodUidLabel]: pod.metadata.uid! };
}

/** Container labels: identity only (pod labels stay on the sandbox). */
export function containerLabels(pod: Pod, c: Container): Record<string, string> {
  return { [PodNameLabel]: pod.metadata.name!, [PodNamespaceLabel]: pod.metadata.namespace!, [PodUidLabel]: pod.metadata.uid!, [ContainerNameLabel]: c.name };
}

/** Container annotations the kubelet reads back. */
export function containerAnnotations(pod: Pod, c: Container, restartCount: number): Record<string, string> {
  const a: Record<string, string> = {
    [ContainerHashAnnotation]: containerHash(c),
    [ContainerRestartCountAnnotation]: String(restartCount),
    [ContainerTerminationMessagePathAnnotation]: c.terminationMessagePath ?? '/dev/termination-log',
    [ContainerTerminationMessagePolicyAnnotation]: c.terminationMessagePolicy ?? 'File',
    [PodTerminationGracePeriodAnnotation]: String(pod.spec.terminationGracePeriodSeconds ?? 30),
  };
  if (c.ports?.length) a[ContainerPortsAnnotation] = JSON.stringify(c.ports);
  return a;
}
