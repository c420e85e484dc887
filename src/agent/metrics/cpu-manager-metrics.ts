/**
 * Upstream's CPU manager metrics (pkg/kubelet/metrics, 1.32): pinning requests and failures (each
 * container of a Guaranteed pod with an integer CPU request, at admission), the shared pool's size
 * (its CPUs less the reserved ones, in millicores; 0 with the `none` policy) and the CPUs
 * allocated exclusively, also by NUMA node; the topology manager's admissions, refusals (read when scraped) and
 * admission time; and the allocations aligned to NUMA nodes and physical cores, and the failures.
 */
import type { AlignmentCount, CpuManagerCounts } from '../cpumanager/views.js';
import type { KubeletMetrics } from './kubelet-metrics.js';
import type { Histogram } from './registry.js';

const FAMILIES: [
  string,
  string,
  'counter' | 'gauge',
  Exclude<keyof CpuManagerCounts, 'alignment' | 'allocatedPerNuma'>,
][] = [
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
  metrics.register({
    family: () => ({
      name: 'kubelet_cpu_manager_allocation_per_numa',
      help: '[ALPHA] Number of CPUs allocated per NUMA node',
      type: 'gauge',
      samples: [...cpus.counts().allocatedPerNuma]
        .sort(([a], [b]) => a - b)
        .map(([node, value]) => ({ labels: { numa_node: String(node) }, value })),
    }),
  });
  metrics.register(topologyAdmissionDuration);
  // Upstream's names (a counter named _count: its _total renames come in v1.38); the NUMA series exist from the
  // start, the physical-core ones with the static policy.
  for (const [name, help, outcome] of [
    [
      'kubelet_container_aligned_compute_resources_count',
      'Cumulative number of aligned compute resources allocated to containers by alignment type.',
      'aligned',
    ],
    [
      'kubelet_container_aligned_compute_resources_failure_count',
      'Cumulative number of failures to allocate aligned compute resources to containers by alignment type.',
      'failed',
    ],
  ] as const)
    metrics.register({
      family: () => {
        const { numaNode, physicalCpu } = cpus.counts().alignment;
        const sample = (boundary: string, scope: string, count: AlignmentCount) => ({
          labels: { boundary, scope },
          value: count[outcome],
        });
        return {
          name,
          help: `[ALPHA] ${help}`,
          type: 'counter',
          samples: [
            sample('numa_node', 'container', numaNode.container),
            sample('numa_node', 'pod', numaNode.pod),
            ...(physicalCpu ? [sample('physical_cpu', 'container', physicalCpu)] : []),
          ],
        };
      },
    });
}
