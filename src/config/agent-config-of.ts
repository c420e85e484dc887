/** The agent's configuration from the resolved flags and KubeletConfiguration (pure): Go names → the agent's units. */
import type { AgentConfig } from '../agent/agent-config.js';
import { bytes } from '../api/quantity.js';
import { parseDuration } from '../lib/duration.js';
import { parseCpuSet } from '../lib/cpuset.js';
import type { KubeletConfiguration } from './schema.js';
import { KUBERNETES_VERSION, TSKUBELET_VERSION } from '../version.js';
import type { ResolvedConfig } from './load.js';
import { evictionThresholds } from './eviction-thresholds.js';
import { reservedMemoryOf } from './validate.js';
import { declaredFeatures } from '../agent/nodestatus/declared-features.js';
import { nodeShutdownOf } from '../agent/runtime/shutdown-groups.js';

/** What composeAgent is built from, for `cfg`. */
export function agentConfigOf(cfg: ResolvedConfig): AgentConfig {
  const kc = cfg.kc;
  return {
    nodeName: cfg.nodeName,
    nodeIP: cfg.nodeIP,
    rootDir: cfg.rootDir,
    podLogsDir: cfg.podLogsDir,
    containerLogsDir: cfg.containerLogsDir,
    staticPodPath: kc.staticPodPath,
    staticPodURL: kc.staticPodURL,
    staticPodURLHeader: kc.staticPodURLHeader,
    fileCheckFrequencyMs: cfg.fileCheckFrequencyMs,
    httpCheckFrequencyMs: cfg.httpCheckFrequencyMs,
    syncFrequencyMs: cfg.syncFrequencyMs,
    runOnce: kc.runOnce,
    objectChangeDetection: kc.configMapAndSecretChangeDetectionStrategy as AgentConfig['objectChangeDetection'],
    containerRuntimeEndpoint: kc.containerRuntimeEndpoint,
    imageCredentialProvider: cfg.imageCredentialProvider,
    imageServiceEndpoint: kc.imageServiceEndpoint,
    seccompDefault: kc.seccompDefault,
    version: TSKUBELET_VERSION,
    streamingIdleTimeoutMs: parseDuration(kc.streamingConnectionIdleTimeout),
    runtimeRequestTimeoutMs: parseDuration(kc.runtimeRequestTimeout)!,
    maxContainerRestartPeriodMs:
      kc.crashLoopBackOff.maxContainerRestartPeriod === undefined
        ? undefined
        : parseDuration(kc.crashLoopBackOff.maxContainerRestartPeriod),
    evictionPressureTransitionMs: parseDuration(kc.evictionPressureTransitionPeriod)!,
    evictionThresholds: evictionThresholds(kc),
    evictionMaxPodGraceSeconds: kc.evictionMaxPodGracePeriod,
    clusterDNS: kc.clusterDNS,
    clusterDomain: kc.clusterDomain,
    resolvConf: kc.resolvConf,
    cgroups: { cgroupsPerQOS: kc.cgroupsPerQOS, cgroupRoot: kc.cgroupRoot, cgroupDriver: kc.cgroupDriver },
    cpuCFSQuota: kc.cpuCFSQuota,
    cpuCFSQuotaPeriodUs: Math.round(parseDuration(kc.cpuCFSQuotaPeriod)! * 1000),
    podPidsLimit: kc.podPidsLimit,
    swapBehavior: kc.memorySwap.swapBehavior,
    topologyManager: {
      policy: kc.topologyManagerPolicy as NonNullable<AgentConfig['topologyManager']>['policy'],
      scope: kc.topologyManagerScope as 'container' | 'pod',
      options: kc.topologyManagerPolicyOptions,
    },
    draReconcilePeriodMs: parseDuration(kc.draManagerReconcilePeriod),
    cpuManager: {
      policy: kc.cpuManagerPolicy,
      reconcilePeriodMs: parseDuration(kc.cpuManagerReconcilePeriod)!,
      reservedCpus: kc.reservedSystemCPUs ?? '',
      options: kc.cpuManagerPolicyOptions,
      optionGates: {
        alpha: kc.featureGates?.CPUManagerPolicyAlphaOptions ?? false,
        beta: kc.featureGates?.CPUManagerPolicyBetaOptions ?? true,
      },
    },
    memoryManager: { policy: kc.memoryManagerPolicy, reservedMemory: reservedMemoryOf(kc) },
    enforceNodeAllocatable: kc.enforceNodeAllocatable,
    reservedCgroups: { system: kc.systemReservedCgroup, kube: kc.kubeReservedCgroup },
    serializeImagePulls: kc.serializeImagePulls,
    imagePullCredentials:
      kc.featureGates?.KubeletEnsureSecretPulledImages === false
        ? undefined
        : { policy: kc.imagePullCredentialsVerificationPolicy, allowlist: kc.preloadedImagesVerificationAllowlist },
    userNamespacesSupport: kc.featureGates?.UserNamespacesSupport ?? true,
    separateDiskGc: kc.featureGates?.KubeletSeparateDiskGC ?? true,
    containerStopSignals: kc.featureGates?.ContainerStopSignals ?? false,
    plegOnDemandRelist: kc.featureGates?.PLEGOnDemandRelist ?? false,
    clusterTrustBundleProjection: kc.featureGates?.ClusterTrustBundleProjection ?? false,
    podCertificateRequest: kc.featureGates?.PodCertificateRequest ?? false,
    singleProcessOOMKill: kc.singleProcessOOMKill,
    disableCpuQuotaWithExclusiveCpus: kc.featureGates?.DisableCPUQuotaWithExclusiveCPUs ?? true,
    userNamespaceIdsPerPod: kc.userNamespaces.idsPerPod,
    nodeShutdown: nodeShutdownOf(kc),
    gracefulShutdownMetrics:
      kc.featureGates?.GracefulNodeShutdown !== false &&
      kc.featureGates?.GracefulNodeShutdownBasedOnPodPriority !== false,
    maxParallelImagePulls: kc.maxParallelImagePulls,
    registryPullQPS: kc.registryPullQPS,
    registryBurst: kc.registryBurst,
    containerGc: cfg.containerGc,
    systemCgroupNames: { kubelet: kc.kubeletCgroups, runtime: cfg.runtimeCgroups, misc: kc.systemCgroups },
    imageGc: {
      highThresholdPercent: kc.imageGCHighThresholdPercent,
      lowThresholdPercent: kc.imageGCLowThresholdPercent,
      minAgeMs: parseDuration(kc.imageMinimumGCAge)!,
      maxAgeMs: parseDuration(kc.imageMaximumGCAge)!,
    },
    node: {
      nodeName: cfg.nodeName,
      nodeIP: cfg.nodeIP,
      hostname: cfg.nodeName,
      port: kc.port,
      maxPods: kc.maxPods,
      podsPerCore: kc.podsPerCore,
      maxImages: kc.nodeStatusMaxImages,
      localStorageCapacityIsolation: kc.localStorageCapacityIsolation,
      nodeLabels: cfg.nodeLabels,
      registerWithTaints: kc.registerWithTaints,
      externalCloudProvider: cfg.externalCloudProvider,
      nodeIPSpecified: cfg.nodeIPSpecified,
      secondaryNodeIP: cfg.secondaryNodeIP,
      providerID: kc.providerID,
      // reservedSystemCPUs stands for the reserved cpu: system-reserved is its size, kube-reserved has none (as
      // upstream's server.go).
      ...reservedCpu(kc),
      evictionHard: kc.evictionHard,
      kubeletVersion: KUBERNETES_VERSION,
      declaredFeatures: declaredFeatures(kc.featureGates),
    },
    registerNode: kc.registerNode,
    podCIDR: kc.podCIDR,
    nodeStatusUpdateFrequencyMs: parseDuration(kc.nodeStatusUpdateFrequency)!,
    nodeStatusReportFrequencyMs: parseDuration(kc.nodeStatusReportFrequency)!,
    nodeLeaseDurationSeconds: kc.nodeLeaseDurationSeconds,
    eventRecordQPS: kc.eventRecordQPS,
    eventBurst: kc.eventBurst,
    allowedUnsafeSysctls: kc.allowedUnsafeSysctls,
    volumeStatsAggPeriodMs: parseDuration(kc.volumeStatsAggPeriod),
    containerLogs: {
      maxSizeBytes: bytes(kc.containerLogMaxSize) ?? 10 * 1024 * 1024,
      maxFiles: kc.containerLogMaxFiles,
      monitorIntervalMs: parseDuration(kc.containerLogMonitorInterval) ?? 10_000,
      maxWorkers: kc.containerLogMaxWorkers,
    },
  };
}

/** kubeReserved / systemReserved, with reservedSystemCPUs' size as the system's cpu when it is set. */
function reservedCpu(kc: KubeletConfiguration): {
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
} {
  if (!kc.reservedSystemCPUs) return { kubeReserved: kc.kubeReserved, systemReserved: kc.systemReserved };
  const { cpu: _kube, ...kubeReserved } = kc.kubeReserved;
  return {
    kubeReserved,
    systemReserved: { ...kc.systemReserved, cpu: String(parseCpuSet(kc.reservedSystemCPUs).length) },
  };
}
