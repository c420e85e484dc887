/**
 * The agent's contract with its caller (main, tests, benches): the resolved configuration it is
 * built from, and what a composed agent offers.
 */
import type { PodCpus } from './cpumanager/views.js';
import type { DeviceManager } from './devices/device-manager.js';
import type { DraManager } from './dra/dra-manager.js';
import type { VerificationPolicy } from './images/pull-records.js';
import type { ShutdownGroup } from './runtime/shutdown-groups.js';
import type { CriRuntime } from '../cri/services.js';
import type { CgroupContext } from './runtime/linux-resources.js';
import type { ImageGcPolicy, ImageGc } from './gc/image-gc.js';
import type { ContainerGcPolicy } from './gc/container-gc-plan.js';
import type { Threshold } from './eviction/signals.js';
import type { MemoryReservation } from './memorymanager/reserved-memory.js';
import type { PodMemory } from './memorymanager/memory-manager.js';
import type { NodeSettings } from './nodestatus/node-object.js';
import type { createAgentHost } from './host.js';
import type { createObservabilityHost } from './stats/observability-host.js';
import type { PodConfig } from './podconfig/pod-config.js';
import type { PodManager } from './pods/pod-manager.js';
import type { PodWorkers } from './sync/pod-workers.js';
import type { StatusManager } from './status/status-manager.js';
import type { GenericPleg } from './pleg/generic-pleg.js';
import type { GarbageCollector } from './gc/garbage-collector.js';
import type { RuntimeState } from './runtime/runtime-state.js';
import type { EventRecorder } from './events/recorder.js';
import type { VolumeManager } from './volume/volume-manager.js';
import type { VolumeStatsCollector } from './volume/volume-stats.js';
import type { ProberManager } from './prober/prober-manager.js';
import type { StatsCollector } from './stats/collector.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';

/** Everything the agent needs to know (resolved from flags + config file by src/config). */
export interface AgentConfig {
  nodeName: string;
  nodeIP: string;
  rootDir: string;
  podLogsDir: string;
  /** Where the legacy container log links go (/var/log/containers; absent: none are made). */
  containerLogsDir?: string;
  staticPodPath?: string;
  staticPodURL?: string;
  staticPodURLHeader: Record<string, string[]>;
  fileCheckFrequencyMs: number;
  httpCheckFrequencyMs: number;
  syncFrequencyMs: number;
  /** runOnce (--runonce): run the first update's pods, register no Node, and let the caller exit (run-once.ts). */
  runOnce?: boolean;
  /** configMapAndSecretChangeDetectionStrategy: how the pods' ConfigMaps and Secrets are kept (absent: Watch). */
  objectChangeDetection?: 'Get' | 'Cache' | 'Watch';
  /** Empty: the embedded process runtime, in-process. */
  containerRuntimeEndpoint: string;
  /** imageServiceEndpoint: the ImageService's own endpoint (empty: the runtime's). */
  imageServiceEndpoint?: string;
  /** seccompDefault: RuntimeDefault for containers that name no seccomp profile. */
  seccompDefault?: boolean;
  version: string;
  /** runtimeRequestTimeout (ms): the CRI client's deadlines (cri/client.ts). */
  runtimeRequestTimeoutMs: number;
  /** crashLoopBackOff.maxContainerRestartPeriod (ms): the crash-loop backoff's cap; unset, upstream's 5 min. */
  maxContainerRestartPeriodMs?: number;
  /** streamingConnectionIdleTimeout, for the embedded runtime's streaming server (ms). */
  streamingIdleTimeoutMs?: number;
  clusterDNS: string[];
  clusterDomain: string;
  /** --resolv-conf ("" → none). */
  resolvConf: string;
  cgroups: CgroupContext;
  /**
   * Set when the runtime does not implement RuntimeConfig (containerd 1.x): the Kubernetes release that ends its
   * support, for kubelet_cri_losing_support.
   */
  criLosingSupport?: string;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodUs: number;
  /** podPidsLimit (≤ 0 or absent: none). */
  podPidsLimit?: number;
  /** memorySwap.swapBehavior (absent or "": NoSwap). */
  swapBehavior?: string;
  /** topologyManagerPolicy, topologyManagerScope and topologyManagerPolicyOptions (absent: none, container). */
  topologyManager?: {
    policy: 'none' | 'best-effort' | 'restricted' | 'single-numa-node';
    scope: 'container' | 'pod';
    options?: Record<string, string>;
  };
  /** draManagerReconcilePeriod: how often the claims of pods no longer active are unprepared (ms). */
  draReconcilePeriodMs?: number;
  /** cpuManagerPolicy, cpuManagerReconcilePeriod and reservedSystemCPUs (absent: policy none). */
  cpuManager?: {
    policy: 'none' | 'static';
    reconcilePeriodMs: number;
    reservedCpus: string;
    /** cpuManagerPolicyOptions, and the CPUManagerPolicyAlphaOptions / BetaOptions gates (off / on by default). */
    options?: Record<string, string>;
    optionGates?: { alpha: boolean; beta: boolean };
  };
  /** memoryManagerPolicy and reservedMemory (absent: policy None). */
  memoryManager?: { policy: string; reservedMemory: MemoryReservation[] };
  /** enforceNodeAllocatable (absent: ["pods"]). */
  enforceNodeAllocatable?: string[];
  /** systemReservedCgroup / kubeReservedCgroup: the existing cgroups system-reserved / kube-reserved cap. */
  reservedCgroups?: { system: string; kube: string };
  serializeImagePulls: boolean;
  /**
   * KubeletEnsureSecretPulledImages: who may use an image already on the node (images/pull-records.ts); absent when the
   * gate is off.
   */
  imagePullCredentials?: { policy: VerificationPolicy; allowlist: string[] };
  /** The UserNamespacesSupport gate (beta, on): whether a pod may set `hostUsers`. */
  userNamespacesSupport: boolean;
  /**
   * The KubeletSeparateDiskGC gate (beta, on): a runtime's own containers' filesystem is reported and acted on; off,
   * the eviction manager refuses to run on one.
   */
  separateDiskGc?: boolean;
  /** singleProcessOOMKill: true keeps cgroup v2's OOM kills to single processes (no `memory.oom.group`). */
  singleProcessOOMKill?: boolean;
  /** The DisableCPUQuotaWithExclusiveCPUs gate (on in v1.36, no longer beta): exclusive CPUs get no CFS quota. */
  disableCpuQuotaWithExclusiveCpus: boolean;
  /** The ContainerStopSignals gate (alpha, off in v1.36): `lifecycle.stopSignal` reaches the runtime and the status. */
  containerStopSignals: boolean;
  /**
   * The PLEGOnDemandRelist gate (beta, off by default in v1.36: kubernetes/kubernetes#137909): on, the status read
   * right after a sync counts as upstream's on-demand single-pod relist in kubelet_pleg_pod_relist_duration_seconds.
   * The read itself is part of every sync either way.
   */
  plegOnDemandRelist?: boolean;
  /**
   * The ClusterTrustBundleProjection gate (beta, off in v1.36): off, a projected `clusterTrustBundle` source fails as
   * upstream's noop manager makes it fail.
   */
  clusterTrustBundleProjection?: boolean;
  /**
   * The PodCertificateRequest gate (beta, off in v1.36): on, projected `podCertificate` sources get a key and a
   * certificate through PodCertificateRequests; off, such a source fails as upstream's no-op manager makes it fail.
   */
  podCertificateRequest?: boolean;
  /** userNamespaces.idsPerPod: the host IDs of each `hostUsers: false` pod's range (absent: 65536). */
  userNamespaceIdsPerPod?: number;
  /**
   * Graceful node shutdown (GracefulNodeShutdown, beta, on) when a shutdown grace period is set: its groups, and
   * whether the shutdown's times are kept (GracefulNodeShutdownBasedOnPodPriority, beta, on). Absent: off.
   */
  nodeShutdown?: { groups: ShutdownGroup[]; recordTimes: boolean };
  /**
   * The graceful-shutdown gauges are exposed (upstream registers them with GracefulNodeShutdown and
   * GracefulNodeShutdownBasedOnPodPriority on, whether a grace period is set or not).
   */
  gracefulShutdownMetrics?: boolean;
  /** --image-credential-provider-config and its bin dir (checked when the agent starts). */
  imageCredentialProvider?: { configPath: string; binDir: string };
  /** maxParallelImagePulls (only without serializeImagePulls; absent: no limit). */
  maxParallelImagePulls?: number;
  /** registryPullQPS / registryBurst (absent or qps 0: no limit). */
  registryPullQPS?: number;
  registryBurst?: number;
  imageGc: ImageGcPolicy;
  containerGc: ContainerGcPolicy;
  /** evictionPressureTransitionPeriod (ms): how long a pressure condition stays after its threshold was last met. */
  evictionPressureTransitionMs?: number;
  /** evictionHard and evictionSoft (with `graceMs`), with evictionMinimumReclaim; absent: node.evictionHard alone. */
  evictionThresholds?: Threshold[];
  /** evictionMaxPodGracePeriod (seconds). */
  evictionMaxPodGraceSeconds?: number;
  /**
   * Named system cgroups (kubeletCgroups, --runtime-cgroups, systemCgroups): the summary's kubelet, runtime and misc.
   */
  systemCgroupNames?: { kubelet?: string; runtime?: string; misc?: string };
  /** The Node object's settings (labels, taints, reserved, eviction thresholds, port, maxPods…). */
  node: NodeSettings;
  registerNode: boolean;
  /** The pod CIDRs the runtime is told at start (`podCIDR`, standalone mode's; a Node's spec.podCIDRs win later). */
  podCIDR: string;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  eventRecordQPS: number;
  eventBurst: number;
  /** Restart a silent pod watch after this long (default 5 min). */
  watchdogMs?: number;
  /** Container log rotation (containerLogMaxSize in bytes, containerLogMaxFiles, containerLogMonitorInterval in ms). */
  containerLogs?: { maxSizeBytes: number; maxFiles: number; monitorIntervalMs: number; maxWorkers?: number };
  /** volumeStatsAggPeriod (ms): how often volume usage is measured. */
  volumeStatsAggPeriodMs?: number;
  /** allowedUnsafeSysctls: sysctls (or `prefix*` globs) pods may set beyond the safe set. */
  allowedUnsafeSysctls?: string[];
}

/** A composed agent. */
export interface Agent {
  host: ReturnType<typeof createAgentHost> & ReturnType<typeof createObservabilityHost>;
  /** The kubelet's /metrics registry (main adds the certificate managers' figures). */
  metrics: KubeletMetrics;
  /** The CPU manager's view for the pod-resources API. */
  cpus: PodCpus;
  /** The memory manager's view for the pod-resources API. */
  memory: PodMemory;
  /** The device manager (its devices per container and its healthy devices for the pod-resources API). */
  devices: Pick<DeviceManager, 'devicesOf' | 'deviceGroupsOf' | 'healthyDevices'>;
  /** The DRA manager (the claims each container uses, for the pod-resources API). */
  dra: Pick<DraManager, 'dynamicResources'>;
  /** Connects to the runtime and starts every loop. */
  start(): Promise<void>;
  /**
   * Runonce mode (cfg.runOnce): after `start`, resolves once the first update's pods all run, or rejects with
   * upstream's error.
   */
  runOnce(): Promise<void>;
  /** Stops loops (and the in-process runtime's containers, each pod within its grace period). */
  stop(o?: { groups?: readonly ShutdownGroup[] }): Promise<void>;
  /** For tests and benchmarks. */
  internals: {
    podConfig: PodConfig;
    podManager: PodManager;
    workers: PodWorkers;
    statusManager: StatusManager;
    pleg: GenericPleg;
    runtime: CriRuntime;
    gc: GarbageCollector;
    imageGc: ImageGc;
    runtimeState: RuntimeState;
    events: EventRecorder;
    volumes: VolumeManager;
    volumeStats: VolumeStatsCollector;
    prober: ProberManager;
    collector: StatsCollector;
  };
}
