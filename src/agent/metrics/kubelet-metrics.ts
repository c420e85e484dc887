/**
 * The kubelet's own Prometheus metrics (/metrics, on registry.ts), under upstream's names, labels,
 * help texts and buckets:
 * - pods and containers: kubelet_running_pods, kubelet_running_containers{container_state},
 *   kubelet_started_pods_total / _errors_total, kubelet_started_containers_total / _errors_total,
 *   kubelet_terminated_containers_total,
 *   kubelet_pod_start_duration_seconds, kubelet_pod_worker_start_duration_seconds,
 *   kubelet_containers_per_pod_count, kubelet_pod_start_sli_duration_seconds /
 *   kubelet_pod_start_total_duration_seconds / kubelet_first_network_pod_start_sli_duration_seconds
 *   (pod-startup-latency.ts), kubelet_pod_worker_duration_seconds,
 *   kubelet_evictions; the pod counts (pod-count-metrics.ts);
 * - the runtime and the node: kubelet_runtime_operations_*, kubelet_pleg_relist_*,
 *   kubelet_pleg_pod_relist_duration_seconds, kubelet_pleg_last_seen_seconds, kubelet_metrics_provider,
 *   kubelet_cgroup_manager_duration_seconds, kubelet_image_garbage_collected_total, kubelet_node_name,
 *   kubernetes_build_info;
 * - volumes: kubelet_volume_stats_* (each claim in use once), storage_operation_duration_seconds,
 *   volume_manager_total_volumes (csi_operations_seconds is registered by compose-volumes.ts);
 * - the servers and the apiserver client: kubelet_http_requests_total / _duration_seconds,
 *   rest_client_requests_total, rest_client_request_duration_seconds, kubelet_websocket_streaming_requests_total;
 * - the certificate managers' TTL and renewal errors (certificate-metrics.ts);
 * and the process_* / nodejs_* figures. The CRI and apiserver clients are instrumented by instrument.ts.
 */
import { existsSync } from 'node:fs';
import { Counter, DEFAULT_BUCKETS, Gauge, Histogram, processFamilies, Registry, registryFamilies } from './registry.js';
import { buildInfo } from './build-info.js';
import { registerHttpMetrics } from './http-metrics.js';
import {
  registerImagePullMetrics,
  registerImageRequestMetrics,
  registerPullRecordGauges,
} from './image-pull-metrics.js';
import type { ImageManagerDeps, ImageRequestCounters } from '../images/image-manager.js';
import type { Pod } from '../../api/types.js';
import type { ContainerTermination } from '../status/container-terminations.js';
import type { FsUsage } from '../volume/types.js';
import { silentLogger, type Logger } from '../../lib/logger.js';
import { PodStartupLatencyTracker } from './pod-startup-latency.js';
import { HealthcheckSlis } from './healthcheck-slis.js';
import { bootTimeMs, NodeStartupTracker } from './node-startup-metrics.js';

/** Upstream's runtime operation buckets: ExponentialBuckets(.005, 2.5, 14). */
const RUNTIME_OP_BUCKETS = Array.from({ length: 14 }, (_, i) => 0.005 * 2.5 ** i);
const START_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
];

/** What the running-pods gauges read at scrape time. */
export interface RunningState {
  pods(): number;
  containers(): Record<string, number>;
}

/** A claim's latest volume figures (volume/volume-stats.ts). */
export interface ClaimStats extends FsUsage {
  pvcRef: { name: string; namespace: string };
}

/** kubelet_volume_stats_<suffix>: upstream's names and help, and the figure each reads. */
const VOLUME_STATS: [string, string, keyof Omit<ClaimStats, 'pvcRef'>][] = [
  ['capacity_bytes', 'Capacity in bytes of the volume', 'capacityBytes'],
  ['available_bytes', 'Number of available bytes in the volume', 'availableBytes'],
  ['used_bytes', 'Number of used bytes in the volume', 'usedBytes'],
  ['inodes', 'Maximum number of inodes in the volume', 'inodes'],
  ['inodes_free', 'Number of free inodes in the volume', 'inodesFree'],
  ['inodes_used', 'Number of used inodes in the volume', 'inodesUsed'],
];

/** The registry and its instruments. */
export class KubeletMetrics {
  private readonly registry = new Registry();
  private readonly startTimeSeconds = Math.round(Date.now() / 1000 - process.uptime());
  readonly podStartDuration: Histogram;
  private readonly podWorkerStartDuration: Histogram;
  private readonly containersPerPod: Histogram;
  readonly podWorkerDuration: Histogram<'operation_type'>;
  readonly cgroupManagerDuration: Histogram<'operation_type'>;
  readonly plegLastSeen: Gauge;
  readonly plegRelistDuration: Histogram;
  readonly plegRelistInterval: Histogram;
  /** kubelet_pleg_pod_relist_duration_seconds: a pod's status read again right after a sync changed it (v1.36). */
  readonly plegPodRelistDuration: Histogram;
  readonly runtimeOps: Counter<'operation_type'>;
  readonly runtimeOpErrors: Counter<'operation_type'>;
  readonly runtimeOpDuration: Histogram<'operation_type'>;
  readonly httpRequests: Counter<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly httpRequestsDuration: Histogram<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly httpInflight: Gauge<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly orphanedRuntimePods: Counter;
  /** kubelet_orphan_pod_cleaned_volumes / _errors: the last sweep's orphaned pod directories, and those that failed. */
  readonly orphanPodCleanedVolumes: Gauge;
  readonly orphanPodCleanedVolumesErrors: Gauge;
  readonly startedPods: Counter;
  readonly startedPodsErrors: Counter;
  /** kubelet_lifecycle_handler_http_fallbacks_total: HTTPS hooks that succeeded over HTTP. */
  readonly lifecycleHttpFallbacks: Counter;
  /** kubelet_sleep_action_terminated_early_total: sleep hooks cut off by their grace period. */
  readonly sleepActionTerminatedEarly: Counter;
  /** kubelet_image_volume_requested_total / _mounted_succeed_total / _mounted_errors_total (beta in v1.35). */
  readonly imageVolumeRequested: Counter;
  readonly imageVolumeMounted: Counter;
  readonly imageVolumeMountErrors: Counter;
  /** kubelet_started_user_namespaced_pods_total / _errors_total (registered with UserNamespacesSupport on). */
  readonly startedUserNamespacedPods: Counter;
  readonly startedUserNamespacedPodsErrors: Counter;
  /** kubelet_admission_rejections_total by reason (upstream's rejectPod). */
  readonly admissionRejections: Counter<'reason'>;
  /** kubelet_run_podsandbox_duration_seconds / _errors_total by runtime handler ("" for the default). */
  readonly runPodSandboxDuration: Histogram<'runtime_handler'>;
  readonly runPodSandboxErrors: Counter<'runtime_handler'>;
  readonly startedContainersErrors: Counter<'container_type' | 'code'>;
  readonly startedContainers: Counter<'container_type'>;
  /** kubelet_terminated_containers_total: each termination a pod status shows, once (v1.36). */
  readonly terminatedContainers: Counter<'container_type' | 'exit_code' | 'reason'>;
  /** kubelet_websocket_streaming_requests_total: exec, attach and port-forward requests over WebSocket (v1.36). */
  readonly webSocketStreamingRequests: Counter<'subresource'>;
  readonly restClientRequests: Counter<'code' | 'method' | 'host'>;
  readonly restClientDuration: Histogram<'verb' | 'host'>;
  readonly evictions: Counter<'eviction_signal'>;
  /** kubelet_eviction_stats_age_seconds: how old the stats were when a threshold they met was acted on. */
  readonly evictionStatsAge: Histogram<'eviction_signal'>;
  readonly imagesCollected: Counter<'reason'>;

  /**
   * The pod startup SLI (pod-startup-latency.ts): fed by the apiserver source, the status manager and the image
   * manager.
   */
  readonly podStartup: PodStartupLatencyTracker;
  /** /metrics/slis: the healthz checks' results (a registry of its own, as upstream's). */
  readonly healthcheckSlis = new HealthcheckSlis();
  /** The image manager's pull observer: the startup SLI's pull times and kubelet_image_pull_duration_seconds. */
  readonly imagePulls: NonNullable<ImageManagerDeps['pullTimes']>;
  /** The image manager's request and record-check counters. */
  readonly imageRequests: ImageRequestCounters;
  readonly storageOperationDuration: Histogram<'volume_plugin' | 'operation_name' | 'status' | 'migrated'>;
  /** The node startup latency gauges, fed by node registration and status. */
  readonly nodeStartup = new NodeStartupTracker(this, {
    bootMs: bootTimeMs(),
    kubeletStartMs: performance.timeOrigin,
    now: Date.now,
  });

  constructor(o: {
    nodeName: string;
    running: RunningState;
    claims?: () => ClaimStats[];
    /** The volume manager's volumes per plugin and state (volume_manager_total_volumes). */
    volumes?: () => { plugin: string; state: string; count: number }[];
    /** Where the pod startup tracker logs "Observed pod startup duration". */
    logger?: Logger;
    /** The UserNamespacesSupport gate: upstream registers the user-namespaced pod counters with it on. */
    userNamespacesSupport?: boolean;
    /** The release that ends the runtime's support (it lacks RuntimeConfig): kubelet_cri_losing_support, only then. */
    criLosingSupport?: string;
  }) {
    const r = this.registry;
    if (o.criLosingSupport)
      r.register(
        new Gauge(
          'kubelet_cri_losing_support',
          '[ALPHA] the Kubernetes version that the currently running CRI implementation will lose support on if not upgraded.',
          ['version'],
        ),
      ).set({ version: o.criLosingSupport }, 1);
    r.register(new Gauge('kubelet_node_name', "[ALPHA] The node's name. The count is always 1.", ['node'])).set(
      { node: o.nodeName },
      1,
    );
    // Beta since v1.36's metrics reference; the help text carries the level, as component-base writes it.
    r.register(
      new Gauge(
        'kubernetes_build_info',
        "[BETA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
        [
          'major',
          'minor',
          'git_version',
          'git_commit',
          'git_tree_state',
          'build_date',
          'go_version',
          'compiler',
          'platform',
        ],
      ),
    ).set(buildInfo(), 1);
    r.register(
      new Gauge('kubelet_running_pods', '[ALPHA] Number of pods that have a running pod sandbox', [], (g) =>
        g.set(undefined, o.running.pods()),
      ),
    );
    r.register(
      new Gauge(
        'kubelet_running_containers',
        '[ALPHA] Number of containers currently running',
        ['container_state'],
        (g) => {
          g.reset();
          for (const [state, n] of Object.entries(o.running.containers())) g.set({ container_state: state }, n);
        },
      ),
    );
    this.podStartDuration = r.register(
      new Histogram(
        'kubelet_pod_start_duration_seconds',
        '[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
        [],
        START_BUCKETS,
      ),
    );
    this.podWorkerDuration = r.register(
      new Histogram(
        'kubelet_pod_worker_duration_seconds',
        '[ALPHA] Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
        ['operation_type'],
        DEFAULT_BUCKETS,
      ),
    );
    this.podWorkerStartDuration = r.register(
      new Histogram(
        'kubelet_pod_worker_start_duration_seconds',
        '[ALPHA] Duration in seconds from kubelet seeing a pod to starting a worker.',
        [],
        DEFAULT_BUCKETS,
      ),
    );
    this.containersPerPod = r.register(
      new Histogram(
        'kubelet_containers_per_pod_count',
        '[ALPHA] The number of containers per pod.',
        [],
        [1, 2, 4, 8, 16],
      ),
    );
    const sli = r.register(
      new Histogram(
        'kubelet_pod_start_sli_duration_seconds',
        '[ALPHA] Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
        [],
        START_BUCKETS,
      ),
    );
    const total = r.register(
      new Histogram(
        'kubelet_pod_start_total_duration_seconds',
        '[ALPHA] Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
        [],
        START_BUCKETS,
      ),
    );
    // A gauge without labels is there from the start, at 0 until set (client_golang's).
    const firstNetworkPod = r.register(
      new Gauge(
        'kubelet_first_network_pod_start_sli_duration_seconds',
        '[INTERNAL] Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
        [],
      ),
    );
    firstNetworkPod.set(undefined, 0);
    this.podStartup = new PodStartupLatencyTracker({
      logger: o.logger ?? silentLogger,
      sink: {
        observe: (sliSeconds, totalSeconds) => {
          if (sliSeconds !== undefined) sli.observe(undefined, sliSeconds);
          total.observe(undefined, totalSeconds);
        },
        firstNetworkPod: (sliSeconds) => firstNetworkPod.set(undefined, sliSeconds),
      },
    });
    const pulled = registerImagePullMetrics(r);
    this.imageRequests = registerImageRequestMetrics(r);
    this.imagePulls = {
      startedPulling: (uid) => this.podStartup.startedPulling(uid),
      finishedPulling: (uid) => this.podStartup.finishedPulling(uid),
      pulled,
    };
    this.plegRelistDuration = r.register(
      new Histogram(
        'kubelet_pleg_relist_duration_seconds',
        '[ALPHA] Duration in seconds for relisting pods in PLEG.',
        [],
        DEFAULT_BUCKETS,
      ),
    );
    this.plegRelistInterval = r.register(
      new Histogram(
        'kubelet_pleg_relist_interval_seconds',
        '[ALPHA] Interval in seconds between relisting in PLEG.',
        [],
        DEFAULT_BUCKETS,
      ),
    );
    this.plegPodRelistDuration = r.register(
      new Histogram(
        'kubelet_pleg_pod_relist_duration_seconds',
        '[ALPHA] Duration in seconds for relisting a single pod in PLEG.',
        [],
        DEFAULT_BUCKETS,
      ),
    );
    // Where the pods' and containers' figures come from: the kubelet reads their cgroups itself, as upstream does
    // through cAdvisor while PodAndContainerStatsFromCRI is off (its v1.36 default; tskubelet has no other path).
    r.register(
      new Gauge(
        'kubelet_metrics_provider',
        "[ALPHA] Metrics provider used by kubelet to collect container stats. Values can be 'cadvisor' and 'cri'",
        ['provider'],
      ),
    ).set({ provider: 'cadvisor' }, 1);
    this.cgroupManagerDuration = r.register(
      new Histogram(
        'kubelet_cgroup_manager_duration_seconds',
        '[ALPHA] Duration in seconds for cgroup manager operations. Broken down by method.',
        ['operation_type'],
        DEFAULT_BUCKETS,
      ),
    );
    this.plegLastSeen = r.register(
      new Gauge('kubelet_pleg_last_seen_seconds', '[ALPHA] Timestamp in seconds when PLEG was last seen active.', []),
    );
    this.runtimeOps = r.register(
      new Counter(
        'kubelet_runtime_operations_total',
        '[ALPHA] Cumulative number of runtime operations by operation type.',
        ['operation_type'],
      ),
    );
    this.runtimeOpErrors = r.register(
      new Counter(
        'kubelet_runtime_operations_errors_total',
        '[ALPHA] Cumulative number of runtime operation errors by operation type.',
        ['operation_type'],
      ),
    );
    this.runtimeOpDuration = r.register(
      new Histogram(
        'kubelet_runtime_operations_duration_seconds',
        '[ALPHA] Duration in seconds of runtime operations. Broken down by operation type.',
        ['operation_type'],
        RUNTIME_OP_BUCKETS,
      ),
    );
    ({
      requests: this.httpRequests,
      duration: this.httpRequestsDuration,
      inflight: this.httpInflight,
    } = registerHttpMetrics(r, DEFAULT_BUCKETS));
    this.orphanedRuntimePods = r.register(
      new Counter(
        'kubelet_orphaned_runtime_pods_total',
        '[ALPHA] Number of pods that have been detected in the container runtime without being already known to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local configuration, which is unusual.',
        [],
      ),
    );
    this.orphanPodCleanedVolumes = r.register(
      new Gauge(
        'kubelet_orphan_pod_cleaned_volumes',
        '[ALPHA] The total number of orphaned Pods whose volumes were cleaned in the last periodic sweep.',
        [],
      ),
    );
    this.orphanPodCleanedVolumesErrors = r.register(
      new Gauge(
        'kubelet_orphan_pod_cleaned_volumes_errors',
        '[ALPHA] The number of orphaned Pods whose volumes failed to be cleaned in the last periodic sweep.',
        [],
      ),
    );
    this.orphanPodCleanedVolumes.set(undefined, 0);
    this.orphanPodCleanedVolumesErrors.set(undefined, 0);
    this.startedPods = r.register(
      new Counter('kubelet_started_pods_total', '[ALPHA] Cumulative number of pods started', []),
    );
    this.startedPodsErrors = r.register(
      new Counter('kubelet_started_pods_errors_total', '[ALPHA] Cumulative number of errors when starting pods', []),
    );
    this.lifecycleHttpFallbacks = r.register(
      new Counter(
        'kubelet_lifecycle_handler_http_fallbacks_total',
        '[ALPHA] The number of times lifecycle handlers successfully fell back to http from https.',
        [],
      ),
    );
    this.sleepActionTerminatedEarly = r.register(
      new Counter(
        'kubelet_sleep_action_terminated_early_total',
        '[ALPHA] The number of times lifecycle sleep handler got terminated before it finishes',
        [],
      ),
    );
    this.imageVolumeRequested = r.register(
      new Counter('kubelet_image_volume_requested_total', '[BETA] Number of requested image volumes.', []),
    );
    this.imageVolumeMounted = r.register(
      new Counter('kubelet_image_volume_mounted_succeed_total', '[BETA] Number of successful image volume mounts.', []),
    );
    this.imageVolumeMountErrors = r.register(
      new Counter('kubelet_image_volume_mounted_errors_total', '[BETA] Number of failed image volume mounts.', []),
    );
    const userNamespacedPods = new Counter(
      'kubelet_started_user_namespaced_pods_total',
      '[ALPHA] Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.',
      [],
    );
    const userNamespacedPodsErrors = new Counter(
      'kubelet_started_user_namespaced_pods_errors_total',
      '[ALPHA] Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.',
      [],
    );
    this.startedUserNamespacedPods = userNamespacedPods;
    this.startedUserNamespacedPodsErrors = userNamespacedPodsErrors;
    if (o.userNamespacesSupport ?? true) {
      r.register(userNamespacedPods);
      r.register(userNamespacedPodsErrors);
    }
    this.admissionRejections = r.register(
      new Counter(
        'kubelet_admission_rejections_total',
        '[ALPHA] Cumulative number pod admission rejections by the Kubelet.',
        ['reason'],
      ),
    );
    this.runPodSandboxDuration = r.register(
      new Histogram(
        'kubelet_run_podsandbox_duration_seconds',
        '[ALPHA] Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.',
        ['runtime_handler'],
        DEFAULT_BUCKETS,
      ),
    );
    this.runPodSandboxErrors = r.register(
      new Counter(
        'kubelet_run_podsandbox_errors_total',
        '[ALPHA] Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.',
        ['runtime_handler'],
      ),
    );
    // The host's cgroup version (upstream sets it as its container manager starts).
    let cgroupVersion: number | undefined;
    r.register(
      new Gauge('kubelet_cgroup_version', '[ALPHA] cgroup version on the hosts.', [], (g) =>
        g.set(undefined, (cgroupVersion ??= existsSync('/sys/fs/cgroup/cgroup.controllers') ? 2 : 1)),
      ),
    );
    // What upstream registers that never moves here: the generic PLEG never drops an event.
    r.register(new Counter('kubelet_pleg_discard_events', '[ALPHA] The number of discard events in PLEG.', []));
    this.imagesCollected = r.register(
      new Counter(
        'kubelet_image_garbage_collected_total',
        '[ALPHA] Total number of images garbage collected by the kubelet, whether through disk usage or image age.',
        ['reason'],
      ),
    );
    this.evictions = r.register(
      new Counter('kubelet_evictions', '[ALPHA] Cumulative number of pod evictions by eviction signal', [
        'eviction_signal',
      ]),
    );
    this.evictionStatsAge = r.register(
      new Histogram(
        'kubelet_eviction_stats_age_seconds',
        '[ALPHA] Time between when stats are collected, and when pod is evicted based on those stats by eviction signal',
        ['eviction_signal'],
        DEFAULT_BUCKETS,
      ),
    );
    this.startedContainers = r.register(
      new Counter('kubelet_started_containers_total', '[ALPHA] Cumulative number of containers started', [
        'container_type',
      ]),
    );
    this.startedContainersErrors = r.register(
      new Counter(
        'kubelet_started_containers_errors_total',
        '[ALPHA] Cumulative number of errors when starting containers',
        ['container_type', 'code'],
      ),
    );
    this.terminatedContainers = r.register(
      new Counter('kubelet_terminated_containers_total', '[ALPHA] Cumulative number of container terminations.', [
        'container_type',
        'exit_code',
        'reason',
      ]),
    );
    this.webSocketStreamingRequests = r.register(
      new Counter(
        'kubelet_websocket_streaming_requests_total',
        '[ALPHA] Total number of WebSocket streaming requests (exec/attach/portforward) received by the kubelet.',
        ['subresource'],
      ),
    );
    for (const [suffix, help, figure] of VOLUME_STATS)
      r.register(
        new Gauge(`kubelet_volume_stats_${suffix}`, `[ALPHA] ${help}`, ['namespace', 'persistentvolumeclaim'], (g) => {
          g.reset();
          for (const c of o.claims?.() ?? [])
            g.set({ namespace: c.pvcRef.namespace, persistentvolumeclaim: c.pvcRef.name }, c[figure]);
        }),
      );
    this.restClientDuration = r.register(
      new Histogram(
        'rest_client_request_duration_seconds',
        '[ALPHA] Request latency in seconds. Broken down by verb, and host.',
        ['verb', 'host'],
        [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
      ),
    );
    this.storageOperationDuration = r.register(
      new Histogram(
        'storage_operation_duration_seconds',
        '[ALPHA] Storage operation duration',
        ['volume_plugin', 'operation_name', 'status', 'migrated'],
        [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600],
      ),
    );
    r.register(
      new Gauge(
        'volume_manager_total_volumes',
        '[ALPHA] Number of volumes in Volume Manager',
        ['plugin_name', 'state'],
        (g) => {
          g.reset();
          for (const v of o.volumes?.() ?? []) g.set({ plugin_name: v.plugin, state: v.state }, v.count);
        },
      ),
    );
    this.restClientRequests = r.register(
      new Counter(
        'rest_client_requests_total',
        '[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.',
        ['code', 'method', 'host'],
      ),
    );
  }

  /** Adds a family read at scrape time (certificate-metrics.ts). */
  register<M extends Parameters<Registry['register']>[0]>(m: M): M {
    return this.registry.register(m);
  }

  /**
   * The executor's start counters, as upstream's SyncPod counts: every sandbox and container start tried, and those
   * that failed (by reason).
   */
  readonly startCounters = {
    pod: (ok: boolean, userNamespaced: boolean): void => {
      this.startedPods.inc();
      if (!ok) this.startedPodsErrors.inc();
      if (!userNamespaced) return;
      this.startedUserNamespacedPods.inc();
      if (!ok) this.startedUserNamespacedPodsErrors.inc();
    },
    container: (type: string, code?: string): void => {
      this.startedContainers.inc({ container_type: type });
      if (code !== undefined) this.startedContainersErrors.inc({ container_type: type, code });
    },
  };

  /** Counts a container termination a pod status shows for the first time (status/container-terminations.ts). */
  readonly countTermination = (termination: ContainerTermination): void =>
    this.terminatedContainers.inc({
      container_type: termination.containerType,
      exit_code: String(termination.exitCode),
      reason: termination.reason,
    });

  /** The image volume counters, as the executor reports each container's image volume mounts. */
  readonly imageVolumeCounters = {
    requested: (mounts: number): void => this.imageVolumeRequested.inc(undefined, mounts),
    mounted: (mounts: number, ok: boolean): void =>
      (ok ? this.imageVolumeMounted : this.imageVolumeMountErrors).inc(undefined, mounts),
  };

  /** The lifecycle hooks' counters. */
  readonly hookCounters = {
    httpFallback: (): void => this.lifecycleHttpFallbacks.inc(),
    sleepTerminatedEarly: (): void => this.sleepActionTerminatedEarly.inc(),
  };

  /**
   * A pod's first sync (update type create): its containers, and the seconds since its source first showed it
   * (kubernetes.io/config.seen).
   */
  observePodCreate(pod: Pod, nowMs: number): void {
    this.containersPerPod.observe(undefined, pod.spec.containers.length);
    const seen = Date.parse(pod.metadata.annotations?.['kubernetes.io/config.seen'] ?? '');
    if (!Number.isNaN(seen)) this.podWorkerStartDuration.observe(undefined, Math.max(0, nowMs - seen) / 1000);
  }

  /**
   * Observes a PLEG relist: its milliseconds, the interval since the last one (ms; none for the first) and when it
   * ended.
   */
  observeRelist(ms: number, intervalMs: number | undefined, nowMs: number): void {
    this.plegRelistDuration.observe(undefined, ms / 1000);
    this.plegLastSeen.set(undefined, Math.floor(nowMs / 1000));
    if (intervalMs !== undefined) this.plegRelistInterval.observe(undefined, intervalMs / 1000);
  }

  /** Observes a cgroup manager operation (cgroups/pod-cgroup-manager.ts CgroupOpObserver). */
  readonly observeCgroup = (op: 'create' | 'update' | 'destroy', seconds: number): void =>
    this.cgroupManagerDuration.observe({ operation_type: op }, seconds);

  /** The pull records' gauges, once the image manager keeps records (KubeletEnsureSecretPulledImages). */
  registerPullRecords(counts: () => { intents: number; records: number }): void {
    registerPullRecordGauges(this.registry, counts);
  }

  /** The exposition text: the process figures, the kubelet's, then component-base's counts of them. */
  text(): string {
    return this.registry.text(processFamilies(this.startTimeSeconds), registryFamilies);
  }
}
