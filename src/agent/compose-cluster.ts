/**
 * Wiring of cluster membership (only with an apiserver): node registration and status, the
 * node Lease, and the pod status sync — started once the machine and the runtime are known.
 */
import type { PodManager } from './pods/pod-manager.js';
import type { StatusManager } from './status/status-manager.js';
import { StatusSync } from './status/status-sync.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import { Histogram } from './metrics/registry.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { KubeClient } from '../lib/kube-client.js';
import type { CriRuntime } from '../cri/services.js';
import type { EventRecorder } from './events/recorder.js';
import type { MachineInfo } from './nodestatus/machine-info.js';
import type { AgentConfig } from './agent-config.js';
import { NodeStatusManager, type NodeStatusManagerDeps } from './nodestatus/node-status-manager.js';
import { LeaseController } from './nodestatus/lease.js';
import type { RuntimeState } from './runtime/runtime-state.js';
import type { PodWorkers } from './sync/pod-workers.js';
import type { SyncLoop } from './sync/sync-loop.js';
import type { NodeInformer } from './nodestatus/node-informer.js';
import type { PodCidr } from './runtime/pod-cidr.js';
import type { DeviceManager } from './devices/device-manager.js';
import { hostCgroupVersion } from './node-setup/cgroup-version.js';

/** What membership needs besides the configuration. */
export interface ClusterMembershipDeps {
  client: KubeClient;
  machine: MachineInfo;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
  runtime: CriRuntime;
  runtimeState: RuntimeState;
  /** `<name>://<version>` of the runtime, for nodeInfo. */
  runtimeVersion: string;
  statusSync: StatusSync;
  /** The Node as the apiserver has it: the base of the status patch (what others put in its capacity stays). */
  nodeInformer?: Pick<NodeInformer, 'status' | 'unschedulable' | 'podCIDRs'>;
  /** The pod CIDRs the runtime was told. */
  podCidr: PodCidr;
  /** The device plugins' resources. */
  devices?: Pick<DeviceManager, 'capacity' | 'allocatable' | 'removedResources' | 'shouldResetExtendedResources'>;
}

/** Starts node status, the Lease and the status sync; returns the node status manager (its UID feeds mirror pods). */
export function startClusterMembership(
  cfg: Pick<
    AgentConfig,
    'node' | 'registerNode' | 'nodeStatusUpdateFrequencyMs' | 'nodeStatusReportFrequencyMs' | 'nodeLeaseDurationSeconds'
  >,
  d: ClusterMembershipDeps,
  o: {
    signal: AbortSignal;
    /** The eviction manager's pressure conditions. */
    pressure?: () => ReadonlySet<string>;
    /** The volume manager's attachable volumes in use. */
    volumesInUse?: () => string[];
    /** "node is shutting down" while it does (the node shutdown manager): the node is not ready then. */
    shutdownStatus?: () => string | undefined;
    /** The node startup latency gauges. */
    startup?: NodeStatusManagerDeps['startup'];
  },
): NodeStatusManager {
  const { signal } = o;
  // The heartbeats do not wait behind pod updates for kubeAPIQPS (upstream's heartbeat client is unthrottled).
  const heartbeat = d.client.unthrottled();
  // Upstream ReadyCondition's errors, in its order: runtime, network, node shutdown.
  const readinessErrors = () =>
    [d.runtimeState.runtimeError(), d.runtimeState.networkError(), o.shutdownStatus?.()].filter(
      (x): x is string => !!x,
    );
  const nodeStatus = new NodeStatusManager({
    client: heartbeat,
    settings: cfg.node,
    registerNode: cfg.registerNode,
    resetExtendedResources: () => d.devices?.shouldResetExtendedResources() ?? false,
    machine: d.machine,
    events: d.events,
    clock: d.clock,
    logger: d.logger,
    updateFrequencyMs: cfg.nodeStatusUpdateFrequencyMs,
    reportFrequencyMs: cfg.nodeStatusReportFrequencyMs,
    startup: o.startup,
    cgroupVersion: hostCgroupVersion(),
    apiStatus: () => d.nodeInformer?.status(),
    unschedulable: () => d.nodeInformer?.unschedulable(),
    podCIDRs: () => d.nodeInformer?.podCIDRs(),
    podCidr: d.podCidr,
    runtime: async () => ({
      runtimeVersion: d.runtimeVersion,
      runtimeErrors: readinessErrors(),
      runtimeHandlers: d.runtimeState.runtimeHandlers(),
      features: d.runtimeState.runtimeFeatures(),
      devices: d.devices
        ? {
            capacity: d.devices.capacity(),
            allocatable: d.devices.allocatable(),
            removed: d.devices.removedResources(),
          }
        : undefined,
      images: (await d.runtime.images.listImages().catch(() => [])).map((i) => ({
        id: i.id,
        names: [...i.repo_digests, ...i.repo_tags],
        sizeBytes: Number(i.size),
      })),
      pressure: o.pressure?.(),
      volumesInUse: o.volumesInUse?.(),
    }),
    readiness: { refresh: () => d.runtimeState.update(), errors: readinessErrors },
  });
  nodeStatus.start({ signal });
  new LeaseController({
    client: heartbeat,
    nodeName: cfg.node.nodeName,
    durationSeconds: cfg.nodeLeaseDurationSeconds,
    nodeUid: () => nodeStatus.nodeUid(),
    clock: d.clock,
    logger: d.logger,
  }).start({ signal });
  d.statusSync.start({ signal });
  return nodeStatus;
}

/**
 * The pod status sync: statuses to the apiserver, and the final DELETE of a deleted pod once its
 * worker has finished (its containers stopped, its volumes released) — or of a pod never run.
 */
export function composeStatusSync(
  client: KubeClient,
  o: {
    statusManager: StatusManager;
    podManager: PodManager;
    workers: Pick<PodWorkers, 'stateOf' | 'isFinished'>;
    syncLoop: Pick<SyncLoop, 'isInactive'>;
    metrics: KubeletMetrics;
    clock: Clock;
    logger: Logger;
  },
): StatusSync {
  const duration = o.metrics.register(
    new Histogram(
      'kubelet_pod_status_sync_duration_seconds',
      '[ALPHA] Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.',
      [],
      [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30, 45, 60],
    ),
  );
  const { statusManager, podManager, clock, logger } = o;
  return new StatusSync({
    client,
    statusManager,
    podManager,
    // Finished: the worker released the pod, or it never had one (admission refused it).
    canBeDeleted: (uid) =>
      o.workers.isFinished(uid) || (o.workers.stateOf(uid) === undefined && o.syncLoop.isInactive(uid)),
    // Upstream CouldHaveRunningContainers: a worker that has not stopped its pod (none: nothing runs).
    couldHaveRunningContainers: (uid) => ['sync', 'terminating'].includes(o.workers.stateOf(uid) ?? ''),
    clock,
    logger,
    observeSync: (s) => duration.observe(undefined, s),
  });
}
