/**
 * Every container of a pod, in upstream podutil.VisitContainers' order with AllContainers: init containers, regular
 * containers, then ephemeral containers. Whatever applies to "the pod's containers" (the objects they name, the
 * profiles they ask for, the names a request may address) applies to all three kinds. Pure.
 */
import type { Container, Pod } from './types.js';

export function allContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers, ...(pod.spec.ephemeralContainers ?? [])];
}
