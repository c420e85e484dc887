/**
 * The field names of upstream's Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1): a summary
 * whose JSON uses any other name would break its consumers.
 */
export const UPSTREAM_FIELDS = new Set([
  'node',
  'pods',
  'nodeName',
  'systemContainers',
  'startTime',
  'cpu',
  'memory',
  'network',
  'fs',
  'runtime',
  'rlimit',
  'swap',
  'name',
  'containers',
  'podRef',
  'namespace',
  'uid',
  'volume',
  'ephemeral-storage',
  'process_stats',
  'process_count',
  'rootfs',
  'logs',
  'accelerators',
  'userDefinedMetrics',
  'time',
  'usageNanoCores',
  'usageCoreNanoSeconds',
  'availableBytes',
  'usageBytes',
  'workingSetBytes',
  'rssBytes',
  'pageFaults',
  'majorPageFaults',
  'rxBytes',
  'rxErrors',
  'txBytes',
  'txErrors',
  'interfaces',
  'capacityBytes',
  'usedBytes',
  'inodesFree',
  'inodes',
  'inodesUsed',
  'pvcRef',
  'imageFs',
  'containerFs',
  'maxpid',
  'curproc',
  'swapAvailableBytes',
  'swapUsageBytes',
  // KubeletPSI (GA in v1.36): cpu.psi, memory.psi and the node's io.psi.
  'io',
  'psi',
  'some',
  'full',
  'total',
  'avg10',
  'avg60',
  'avg300',
]);
/** Every key used anywhere in `v`. */
export function fieldNames(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) fieldNames(x, out);
  else if (v && typeof v === 'object')
    for (const [key, x] of Object.entries(v)) {
      out.add(key);
      fieldNames(x, out);
    }
  return out;
}
