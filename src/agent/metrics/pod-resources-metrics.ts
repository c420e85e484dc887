/**
 * Upstream's pod-resources API counters, by `server_api_version` ("v1"):
 * kubelet_pod_resources_endpoint_requests_total (every call), kubelet_pod_resources_endpoint_requests_list /
 * _get_allocatable / _get and kubelet_pod_resources_endpoint_errors_list / _get_allocatable / _get. A call the
 * rate limit refuses is counted in none, as upstream's interceptor refuses it before the server sees it.
 */
import type { KubeletMetrics } from './kubelet-metrics.js';
import { Counter } from './registry.js';

/** A pod-resources method, as the API names it. */
export type PodResourcesMethod = 'List' | 'GetAllocatableResources' | 'Get';

/** Each method's suffix in upstream's names, and its help text's name for it. */
const METHODS: Record<PodResourcesMethod, { suffix: string; endpoint: string }> = {
  List: { suffix: 'list', endpoint: 'List' },
  GetAllocatableResources: { suffix: 'get_allocatable', endpoint: 'GetAllocatableResources' },
  Get: { suffix: 'get', endpoint: 'Get' },
};

const VERSION = { server_api_version: 'v1' };

/** Registers the counters; the function it returns counts one call of `method` and whether it failed. */
export function registerPodResourcesMetrics(
  metrics: KubeletMetrics,
): (method: PodResourcesMethod, failed: boolean) => void {
  const total = metrics.register(
    new Counter(
      'kubelet_pod_resources_endpoint_requests_total',
      '[ALPHA] Cumulative number of requests to the PodResource endpoint. Broken down by server api version.',
      ['server_api_version'],
    ),
  );
  const requests = new Map<PodResourcesMethod, Counter<'server_api_version'>>();
  const errors = new Map<PodResourcesMethod, Counter<'server_api_version'>>();
  for (const [method, { suffix, endpoint }] of Object.entries(METHODS) as [
    PodResourcesMethod,
    (typeof METHODS)[PodResourcesMethod],
  ][]) {
    requests.set(
      method,
      metrics.register(
        new Counter(
          `kubelet_pod_resources_endpoint_requests_${suffix}`,
          `[ALPHA] Number of requests to the PodResource ${endpoint} endpoint. Broken down by server api version.`,
          ['server_api_version'],
        ),
      ),
    );
    errors.set(
      method,
      metrics.register(
        new Counter(
          `kubelet_pod_resources_endpoint_errors_${suffix}`,
          `[ALPHA] Number of requests to the PodResource ${endpoint} endpoint which returned error. Broken down by server api version.`,
          ['server_api_version'],
        ),
      ),
    );
  }
  return (method, failed) => {
    total.inc(VERSION);
    requests.get(method)!.inc(VERSION);
    if (failed) errors.get(method)!.inc(VERSION);
  };
}
