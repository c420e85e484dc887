/**
 * Wiring of the volume manager and what its plugins read: with an apiserver client, the object
 * fetcher (ConfigMaps, Secrets, PersistentVolumes, CSIDrivers, VolumeAttachments), the
 * service-account token manager, the ClusterTrustBundles and the pods' certificates; the
 * downward API's node facts; the volume stats collector; the plugin watcher on
 * `<root-dir>/plugins_registry` with its CSI handler, the registered CSI drivers and (with an
 * apiserver) the CSINode object.
 */
import type { PluginHandler } from './pluginmanager/plugin-watcher.js';
import { ServiceInformer } from './objects/service-informer.js';
import { ClusterTrustBundles } from './objects/cluster-trust-bundles.js';
import { PodCertificateManager } from './certificate/pod-certificates.js';
import { join } from 'node:path';
import { sleep, type Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { messageOf } from '../lib/errors.js';
import type { KubeClient } from '../lib/kube-client.js';
import { apiError } from '../lib/kube-client.js';
import type { EventSink } from './events/recorder.js';
import { PodObjectFetcher } from './objects/pod-objects.js';
import { objectManagers } from './objects/object-managers.js';
import { TokenManager } from './volume/token-manager.js';
import { VolumeManager } from './volume/volume-manager.js';
import { volumePlugins } from './volume/plugins/all.js';
import { VolumeStatsCollector } from './volume/volume-stats.js';
import { CsiDrivers } from './volume/csi/csi-drivers.js';
import { CsiNodeInfoManager } from './volume/csi/csi-node-info.js';
import { csiRegistrationHandler } from './volume/csi/csi-registration.js';
import { AllocatableUpdates } from './volume/csi/allocatable-updates.js';
import type { CsiDriverObj } from './volume/csi/csi-api-types.js';
import { CsiVolumes } from './volume/plugins/csi.js';
import { PluginWatcher } from './pluginmanager/plugin-watcher.js';
import type { AgentConfig } from './agent-config.js';
import type { AdmissionNode } from './admission/predicate.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import { Histogram } from './metrics/registry.js';

/** The volume manager, its stats collector, the object fetcher (also used for env) and what starts their loops. */
export function composeVolumes(
  cfg: AgentConfig,
  o: {
    api?: KubeClient;
    logger: Logger;
    clock: Clock;
    events: EventSink;
    nodeAllocatable: () => AdmissionNode['allocatable'] | undefined;
    metrics: KubeletMetrics;
    /** The DRA manager's handler for `DRAPlugin` registrations (dra/dra-manager.ts). */
    draHandler?: PluginHandler;
    /** Told when a pod's directory is gone (its volumes torn down). */
    onPodRemoved?(uid: string): void;
    /** The Node's `node.alpha.kubernetes.io/ttl` in ms, when it has one. */
    nodeObjectTtlMs?: () => number | undefined;
    /** Told which pods name a ConfigMap or Secret that changed. */
    onObjectChange?(podUids: string[]): void;
  },
): {
  volumes: VolumeManager;
  volumeStats: VolumeStatsCollector;
  objects?: PodObjectFetcher;
  start(signal: AbortSignal): void;
} {
  const { api, clock, logger } = o;
  const services = api ? new ServiceInformer({ client: api, clock, logger }) : undefined;
  const managers = api
    ? objectManagers(cfg.objectChangeDetection ?? 'Watch', {
        client: api,
        clock,
        logger,
        syncFrequencyMs: cfg.syncFrequencyMs,
        nodeTtlMs: o.nodeObjectTtlMs,
        onChange: o.onObjectChange,
      })
    : undefined;
  const objects =
    api && services && managers ? new PodObjectFetcher({ client: api, clock, services, ...managers }) : undefined;
  const tokens = api ? new TokenManager({ client: api, clock }) : undefined;
  const trustBundles =
    api && cfg.clusterTrustBundleProjection ? new ClusterTrustBundles({ client: api, clock, logger }) : undefined;
  const podCertificates =
    api && cfg.podCertificateRequest
      ? new PodCertificateManager({
          client: api,
          clock,
          logger,
          events: o.events,
          nodeName: cfg.nodeName,
          onRequestChange: (uids) => o.onObjectChange?.(uids),
        })
      : undefined;
  // upstream's CSI client metrics interceptor (pkg/volume/util/metrics.go).
  const csiOperations = o.metrics.register(
    new Histogram(
      'csi_operations_seconds',
      '[ALPHA] Container Storage Interface operation duration with gRPC error code status total',
      ['driver_name', 'method_name', 'grpc_status_code', 'migrated'],
      [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600],
    ),
  );
  const drivers = new CsiDrivers({
    observe: (c) =>
      csiOperations.observe(
        { driver_name: c.driver, method_name: c.method, grpc_status_code: c.code, migrated: 'false' },
        c.seconds,
      ),
  });
  const nodeInfo = api ? new CsiNodeInfoManager({ client: api, nodeName: cfg.nodeName }) : undefined;
  const volumes = new VolumeManager({
    rootDir: cfg.rootDir,
    clock,
    logger,
    events: o.events,
    plugins: volumePlugins(
      new CsiVolumes({ drivers, rootDir: cfg.rootDir, nodeName: cfg.nodeName, logger, events: o.events }),
    ),
    onPodRemoved: (uid) => {
      tokens?.forgetPod(uid);
      podCertificates?.forgetPod(uid);
      o.onPodRemoved?.(uid);
    },
    observe: (v) =>
      o.metrics.storageOperationDuration.observe(
        {
          volume_plugin: v.plugin,
          operation_name: v.operation,
          status: v.ok ? 'success' : 'fail-unknown',
          migrated: 'false',
        },
        v.seconds,
      ),
    host: {
      hasApiserver: !!api,
      trustAnchors: trustBundles,
      podCertificates,
      isRoot: process.getuid?.() === 0,
      events: o.events,
      logger,
      nodeAllocatableMemoryBytes: () => o.nodeAllocatable()?.memoryBytes,
      getObject: (resource, ns, name) => objects!.namespaced(resource, ns, name),
      getPersistentVolume: (name) => objects!.get(`/api/v1/persistentvolumes/${encodeURIComponent(name)}`),
      getClusterObject: (path, f) => objects!.get(path, f),
      getToken: (k) => tokens!.getToken(k),
      patchClaimStatus: api
        ? async (ns, name, patch) => {
            const claims = `/api/v1/namespaces/${encodeURIComponent(ns)}/persistentvolumeclaims`;
            const path = `${claims}/${encodeURIComponent(name)}/status`;
            const r = await api.request({
              method: 'PATCH',
              path,
              contentType: 'application/merge-patch+json',
              body: patch,
            });
            if (r.status !== 200) throw apiError(`patch ${path}`, r);
          }
        : undefined,
      get downward() {
        return { nodeName: cfg.nodeName, hostIPs: [cfg.nodeIP], podIPs: [], nodeAllocatable: o.nodeAllocatable() };
      },
    },
  });
  const volumeStats = new VolumeStatsCollector({ volumes, clock, logger, periodMs: cfg.volumeStatsAggPeriodMs });
  const watcher = new PluginWatcher({
    dir: join(cfg.rootDir, 'plugins_registry'),
    handlers: {
      CSIPlugin: csiRegistrationHandler({
        drivers,
        nodeInfo,
        allocatable: nodeInfo
          ? new AllocatableUpdates({
              clock,
              logger,
              driverObject: (name) =>
                objects!.get<CsiDriverObj>(`/apis/storage.k8s.io/v1/csidrivers/${encodeURIComponent(name)}`),
              maxVolumes: async (name) => (await drivers.client(name).nodeGetInfo()).max_volumes_per_node,
              setAllocatable: (name, count) => nodeInfo.setAllocatable(name, count),
            })
          : undefined,
        logger,
      }),
      ...(o.draHandler ? { DRAPlugin: o.draHandler } : {}),
    },
    clock,
    logger,
  });
  // upstream's pod certificate collector (registered with the PodCertificateRequest gate on).
  if (podCertificates)
    o.metrics.register({
      family: () => ({
        name: 'kubelet_podcertificate_states',
        help:
          '[ALPHA] Gauge vector reporting the number of pod certificate projected volume sources, ' +
          'faceted by signer_name and state.',
        type: 'gauge',
        samples: podCertificates
          .stateCounts()
          .map((c) => ({ labels: { signer_name: c.signerName, state: c.state }, value: c.count })),
      }),
    });
  // upstream's plugin manager collector: every plugin socket found, and every one registered.
  o.metrics.register({
    family: () => ({
      name: 'plugin_manager_total_plugins',
      help: '[ALPHA] Number of plugins in Plugin Manager',
      type: 'gauge',
      samples: watcher.pluginCounts().map((p) => ({ labels: { socket_path: p.socketPath, state: p.state }, value: 1 })),
    }),
  });
  return {
    volumes,
    volumeStats,
    objects,
    start(signal) {
      services?.start(signal);
      managers?.start(signal);
      trustBundles?.start(signal);
      podCertificates?.start(signal);
      volumeStats.start({ signal });
      watcher
        .start({ signal })
        .catch((err: unknown) => logger.error({ err: messageOf(err) }, 'plugin watcher failed to start'));
      signal.addEventListener('abort', () => drivers.close());
      // upstream initializeCSINode: the CSINode exists once the Node does (retried until then).
      if (nodeInfo)
        void (async () => {
          for (let delay = 500; !signal.aborted; delay = Math.min(delay * 2, 30_000)) {
            try {
              return await nodeInfo.initialize();
            } catch (err) {
              logger.debug({ err: messageOf(err) }, 'CSINode not initialized yet');
            }
            await sleep(delay, signal, clock);
          }
        })();
    },
  };
}
