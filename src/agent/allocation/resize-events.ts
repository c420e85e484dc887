/**
 * What the kubelet tells about a pod's in-place resize (upstream pkg/kubelet/events resize
 * messages and the resize metrics' labels). Pure.
 */
import type { Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';
import { POD_LEVEL, type ContainerResources } from './checkpoint.js';

/** Upstream's event reasons. */
export const RESIZE_STARTED = 'ResizeStarted';
export const RESIZE_COMPLETED = 'ResizeCompleted';
export const RESIZE_ERROR = 'ResizeError';
export const RESIZE_DEFERRED = 'ResizeDeferred';
export const RESIZE_INFEASIBLE = 'ResizeInfeasible';

/**
 * Go's json.Marshal of a ResourceRequirements: limits, requests (keys sorted), claims; empty ones
 * left out (undefined, which JSON.stringify skips).
 */
function requirementsJson(r: Pod['spec']['containers'][number]['resources']): object {
  const sorted = (m: Record<string, string> | undefined) =>
    m && Object.keys(m).length
      ? Object.fromEntries(
          Object.keys(m)
            .sort()
            .map((k) => [k, m[k]]),
        )
      : undefined;
  const claims = (r as { claims?: unknown[] } | undefined)?.claims;
  return {
    limits: sorted(r?.limits as Record<string, string> | undefined),
    requests: sorted(r?.requests as Record<string, string> | undefined),
    claims: claims?.length ? claims : undefined,
  };
}

/**
 * `<prefix>: {"initContainers":[…],"containers":[…],"generation":N[,"error":"…"]}`: each
 * container's resources as `pod` has them (upstream podResizeMessage).
 */
export function resizeMessage(prefix: string, pod: Pod, error?: string): string {
  const of = (cs: readonly Pod['spec']['containers'][number][] | undefined) =>
    cs?.length ? cs.map((c) => ({ name: c.name, resources: requirementsJson(c.resources) })) : undefined;
  const init = of(pod.spec.initContainers);
  const main = of(pod.spec.containers);
  const summary = {
    ...(init ? { initContainers: init } : {}),
    ...(main ? { containers: main } : {}),
    generation: pod.metadata.generation ?? 0,
    ...(error ? { error } : {}),
  };
  return `${prefix}: ${JSON.stringify(summary)}`;
}

/** One requested change of one container (kubelet_container_requested_resizes_total's labels). */
export interface RequestedResize {
  resource: string;
  requirement: 'requests' | 'limits';
  operation: 'add' | 'remove' | 'increase' | 'decrease';
}

const amount = (resource: string, value: string | undefined) =>
  value === undefined ? 0 : ((resource === 'cpu' ? milliCpu(value) : bytes(value)) ?? 0);

/**
 * The changes from `before` to `after` of each container's cpu and memory (upstream
 * resizeOperationForResources); the pod-level resources are not a container's.
 */
export function requestedResizes(
  before: ReadonlyMap<string, ContainerResources>,
  after: ReadonlyMap<string, ContainerResources>,
): RequestedResize[] {
  const out: RequestedResize[] = [];
  for (const [name, next] of after) {
    const previous = before.get(name);
    if (!previous || name === POD_LEVEL) continue;
    for (const requirement of ['requests', 'limits'] as const)
      for (const resource of ['cpu', 'memory']) {
        const a = amount(resource, previous[requirement]?.[resource]);
        const b = amount(resource, next[requirement]?.[resource]);
        const operation = b === a ? undefined : a === 0 ? 'add' : b === 0 ? 'remove' : b < a ? 'decrease' : 'increase';
        if (operation) out.push({ resource, requirement, operation });
      }
  }
  return out;
}
