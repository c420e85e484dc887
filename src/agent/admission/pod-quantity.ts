/**
 * A pod's effective quantity of one resource (upstream PodRequests / PodLimits): the larger of
 * what its containers and sidecars take together and what its largest init container takes,
 * plus the pod's overhead. Pure.
 */
import type { Container, Pod } from '../../api/types.js';

/** The quantity of a pod (its `spec`), given each container's (`perContainer`) and the pod's `overhead`. */
export function podQuantity(spec: Pod['spec'], perContainer: (c: Container) => number, overhead: number): number {
  const inits = spec.initContainers ?? [];
  const running = [...spec.containers, ...inits.filter((c) => c.restartPolicy === 'Always')].reduce(
    (n, c) => n + perContainer(c),
    0,
  );
  return Math.max(running, ...inits.map(perContainer), 0) + overhead;
}
