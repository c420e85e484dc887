/**
 * Upstream's CPU manager metrics (pkg/kubelet/metrics, 1.32): pinning requests and failures (each
 * container of a Guaranteed pod with an integer CPU request, at admission), the shared pool's size
 * (its CPUs less the reserved ones, in millicores; 0 with the `none` policy) and the CPUs
 * allocated exclusively; and the topology manager's admissions, refusals (read when scraped) and
 * admission time.
 */
import type { CpuManagerCounts } from '../cpumanager/views.js';
import type { KubeletMetrics } from './kubelet-metrics.js';
import type { Histogram } from './registry.js';

const FAMILIES: [string, string, 'counter' | 'gauge', keyof CpuManagerCounts][] = [
  [
    'kubelet_cpu_manager_pinning_requests_total',
    'The number of cpu core allocations which required pinning.',
    'counter',
    'pinningRequests',
  ],
  [
    'kubelet_cpu_manager_pinning_errors_total',
    'The number of cpu core allocations which required pinning failed.',
    'counter',
    'pinningErrors',
  ],
  [
    'kubelet_cpu_manager_shared_pool_size_millicores',
    'The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.',
    'gauge',
    'sharedPoolMilli',
  ],
  [
    'kubelet_cpu_manager_exclusive_cpu_allocation_count',
    'The total number of CPUs exclusively allocated to containers running on this node',
    'gauge',
    'exclusiveCpus',
  ],
  [
    'kubelet_topology_manager_admission_requests_total',
    'The number of admission requests where resources have to be aligned.',
    'counter',
    'topologyAdmissions',
  ],
  [
    'kubelet_topology_manager_admission_errors_total',
    'The number of admission request failures where resources could not be aligned.',
    'counter',
    'topologyErrors',
  ],
];

export function registerCpuManagerMetrics(
  metrics: KubeletMetrics,
  cpus: { counts(): CpuManagerCounts },
  topologyAdmissionDuration: Histogram,
): void {
  for (const [name, help, type, key] of FAMILIES)
    metrics.register({
      family: () => ({ name, help: `[ALPHA] ${help}`, type, samples: [{ value: cpus.counts()[key] }] }),
    });
  metrics.register(topologyAdmissionDuration);
}
