/**
 * Upstream's device plugin metrics (pkg/kubelet/metrics): each plugin registration, and how long
 * each Allocate took, by resource name.
 */
import { Counter, DEFAULT_BUCKETS, Histogram } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

export interface DevicePluginMetrics {
  registered(resource: string): void;
  allocated(resource: string, seconds: number): void;
}

export function registerDevicePluginMetrics(metrics: KubeletMetrics): DevicePluginMetrics {
  const registrations = metrics.register(
    new Counter(
      'kubelet_device_plugin_registration_total',
      '[ALPHA] Cumulative number of device plugin registrations. Broken down by resource name.',
      ['resource_name'],
    ),
  );
  const allocations = metrics.register(
    new Histogram(
      'kubelet_device_plugin_alloc_duration_seconds',
      '[ALPHA] Duration in seconds to serve a device plugin Allocation request. Broken down by resource name.',
      ['resource_name'],
      DEFAULT_BUCKETS,
    ),
  );
  return {
    registered: (resource) => registrations.inc({ resource_name: resource }),
    allocated: (resource, seconds) => allocations.observe({ resource_name: resource }, seconds),
  };
}
