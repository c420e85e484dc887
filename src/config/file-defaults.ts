/**
 * Upstream's defaulting of a decoded KubeletConfiguration file (SetDefaults_KubeletConfiguration)
 * where it differs from "absent means default": a field that is not a pointer in the Go type gets
 * its default when it holds the zero value. kubeadm writes such zeros ("0s" durations) into
 * every node's config, so "syncFrequency: 0s" means one minute, not a hot loop. Flags are applied
 * after this, as upstream applies them after decoding (pure). One deliberate exception: an empty
 * containerRuntimeEndpoint stays empty and means the embedded runtime (upstream: containerd's socket).
 */

/** Paths of the non-pointer fields upstream defaults when zero ("0s", 0 or ""). */
const ZERO_MEANS_DEFAULT: string[][] = [
  ['syncFrequency'],
  ['fileCheckFrequency'],
  ['httpCheckFrequency'],
  ['address'],
  ['port'],
  ['authentication', 'webhook', 'cacheTTL'],
  ['authorization', 'mode'],
  ['authorization', 'webhook', 'cacheAuthorizedTTL'],
  ['authorization', 'webhook', 'cacheUnauthorizedTTL'],
  ['registryBurst'],
  ['eventBurst'],
  ['healthzBindAddress'],
  ['streamingConnectionIdleTimeout'],
  ['nodeStatusUpdateFrequency'],
  ['nodeLeaseDurationSeconds'],
  ['imageMinimumGCAge'],
  ['volumeStatsAggPeriod'],
  ['cgroupDriver'],
  ['runtimeRequestTimeout'],
  ['maxPods'],
  ['kubeAPIBurst'],
  ['evictionPressureTransitionPeriod'],
  ['containerLogMaxSize'],
  ['podLogsDir'],
  ['cpuManagerPolicy'],
  ['memoryManagerPolicy'],
  ['cpuManagerReconcilePeriod'],
  ['draManagerReconcilePeriod'],
  ['topologyManagerPolicy'],
  ['topologyManagerScope'],
];

const isZero = (v: unknown) =>
  v === 0 || v === '' || (typeof v === 'string' && /^(0+(\.0*)?(ns|us|µs|ms|s|m|h))+$/.test(v));

/** `file` with upstream's zero-value defaults applied (a new object; `file` is not changed). */
export function applyFileDefaults(file: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(file);
  const at = (path: string[]): { parent: Record<string, unknown>; key: string } | undefined => {
    let o: unknown = out;
    for (const k of path.slice(0, -1)) {
      o = (o as Record<string, unknown> | undefined)?.[k];
      if (!o || typeof o !== 'object') return undefined;
    }
    return { parent: o as Record<string, unknown>, key: path[path.length - 1] };
  };
  // nodeStatusReportFrequency follows an explicitly set nodeStatusUpdateFrequency (upstream's backward compatibility).
  if (out.nodeStatusReportFrequency === undefined || isZero(out.nodeStatusReportFrequency)) {
    if (out.nodeStatusUpdateFrequency !== undefined && !isZero(out.nodeStatusUpdateFrequency))
      out.nodeStatusReportFrequency = out.nodeStatusUpdateFrequency;
    else delete out.nodeStatusReportFrequency;
  }
  for (const path of ZERO_MEANS_DEFAULT) {
    const f = at(path);
    if (f && f.key in f.parent && isZero(f.parent[f.key])) delete f.parent[f.key];
  }
  // serializeImagePulls defaults to false when maxParallelImagePulls allows more than one pull.
  if (
    out.serializeImagePulls === undefined &&
    typeof out.maxParallelImagePulls === 'number' &&
    out.maxParallelImagePulls >= 2
  )
    out.serializeImagePulls = false;
  return out;
}
