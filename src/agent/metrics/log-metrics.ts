/**
 * Upstream's log metrics collector: kubelet_container_log_filesystem_used_bytes, each container's log bytes on
 * the filesystem, by pod UID, namespace, pod and container. Read at scrape time from the stats collector's latest
 * snapshot (the figures `/stats/summary` gives as a container's `logs.usedBytes`); a container the snapshot has no
 * log figure for has no series, as upstream's.
 */
import type { StatsSnapshot } from '../stats/samples.js';
import type { Family } from './prom-text.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

/** The family for one snapshot (pure). */
export function containerLogFamily(snapshot: StatsSnapshot | undefined): Family {
  return {
    name: 'kubelet_container_log_filesystem_used_bytes',
    help: "[ALPHA] Bytes used by the container's logs on the filesystem.",
    type: 'gauge',
    samples: (snapshot?.containers ?? []).flatMap((c) =>
      c.logsUsed === undefined
        ? []
        : [
            {
              labels: { uid: c.podUid, namespace: c.podNamespace, pod: c.podName, container: c.name },
              value: c.logsUsed,
            },
          ],
    ),
  };
}

/** Registers the collector over `snapshot` (the stats collector's latest). */
export function registerLogMetrics(metrics: KubeletMetrics, snapshot: () => StatsSnapshot | undefined): void {
  metrics.register({ family: () => containerLogFamily(snapshot()) });
}
