/**
 * Wiring of the volume manager and what its plugins read: with an apiserver client, the object
 * fetcher (ConfigMaps, Secrets, PersistentVolumes) and the service-account token manager; the
 * downward API's node facts; the volume stats collector.
 */
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { KubeClient } from '../lib/kube-client.js';
import type { EventSink } from './events/recorder.js';
import { PodObjectFetcher } from './objects/pod-objects.js';
import { TokenManager } from './volume/token-manager.js';
import { VolumeManager } from './volume/volume-manager.js';
import { VolumeStatsCollector } from './volume/volume-stats.js';
import type { AgentConfig } from './agent-config.js';
import type { AdmissionNode } from './admission/predicate.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';

/** The volume manager, its stats collector and the object fetcher (also used for env). */
export function composeVolumes(
  cfg: AgentConfig,
  o: {
    api?: KubeClient;
    logger: Logger;
    clock: Clock;
    events: EventSink;
    nodeAllocatable: () => AdmissionNode['allocatable'] | undefined;
    metrics: KubeletMetrics;
  },
): { volumes: VolumeManager; volumeStats: VolumeStatsCollector; objects?: PodObjectFetcher } {
  const { api, clock, logger } = o;
  const objects = api ? new PodObjectFetcher({ client: api, clock }) : undefined;
  const tokens = api ? new TokenManager({ client: api, clock }) : undefined;
  const volumes = new VolumeManager({
    rootDir: cfg.rootDir,
    clock,
    logger,
    events: o.events,
    onPodRemoved: (uid) => tokens?.forgetPod(uid),
    observe: (v) =>
      o.metrics.storageOperationDuration.observe(
        { volume_plugin: v.plugin, operation_name: v.operation, status: v.ok ? 'success' : 'fail-unknown', migrated: 'false' },
        v.seconds,
      ),
    host: {
      hasApiserver: !!api,
      isRoot: process.getuid?.() === 0,
      getObject: (resource, ns, name) => objects!.namespaced(resource, ns, name),
      getPersistentVolume: (name) => objects!.get(`/api/v1/persistentvolumes/${encodeURIComponent(name)}`),
      getToken: (k) => tokens!.getToken(k),
      get downward() {
        return { nodeName: cfg.nodeName, hostIPs: [cfg.nodeIP], podIPs: [], nodeAllocatable: o.nodeAllocatable() };
      },
    },
  });
  const volumeStats = new VolumeStatsCollector({ volumes, clock, logger, periodMs: cfg.volumeStatsAggPeriodMs });
  return { volumes, volumeStats, objects };
}
