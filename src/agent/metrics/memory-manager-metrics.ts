/**
 * Upstream's memory manager metrics (pkg/kubelet/metrics): each container of a Guaranteed pod the
 * Static policy pinned at admission, and those it could not (0 with the `None` policy, which pins
 * nothing). Read when scraped.
 */
import type { MemoryManagerCounts } from '../memorymanager/memory-manager.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

export function registerMemoryManagerMetrics(metrics: KubeletMetrics, memory: { counts(): MemoryManagerCounts }): void {
  for (const [name, help, key] of [
    [
      'kubelet_memory_manager_pinning_requests_total',
      'The number of memory pages allocations which required pinning.',
      'pinningRequests',
    ],
    [
      'kubelet_memory_manager_pinning_errors_total',
      'The number of memory pages allocations which required pinning that failed.',
      'pinningErrors',
    ],
  ] as const)
    metrics.register({
      family: () => ({ name, help: `[ALPHA] ${help}`, type: 'counter', samples: [{ value: memory.counts()[key] }] }),
    });
}
