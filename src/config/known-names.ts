/**
 * Names the Go kubelet accepts that tskubelet does not implement yet. They are accepted (the
 * drop-in rule: an existing node's config must start) with one warning each. A flag upstream does
 * not know is an error; a config field it does not know is left out, as its lenient decoding does
 * (config/load.ts).
 */

/** Feature gates whose setting tskubelet reads (featureGates, --feature-gates); others are accepted with a warning. */
export const implementedFeatureGates = new Set([
  'KubeletEnsureSecretPulledImages',
  'KubeletCrashLoopBackOffMax',
  'NodeLogQuery',
  'CPUManagerPolicyAlphaOptions',
  'CPUManagerPolicyBetaOptions',
  'UserNamespacesSupport',
  'GracefulNodeShutdown',
  'GracefulNodeShutdownBasedOnPodPriority',
  'NodeDeclaredFeatures',
  'ContainerStopSignals',
  'DisableCPUQuotaWithExclusiveCPUs',
  'KubeletSeparateDiskGC',
  'ClusterTrustBundleProjection',
  'PodCertificateRequest',
  'PodLogsQuerySplitStreams',
  'PLEGOnDemandRelist',
]);

/**
 * Gates whose v1.36 default (the value here; the stages and defaults as v1.36's component references list its alpha
 * and beta gates) is what tskubelet does, but whose other value it does not implement beyond the node's declared
 * features: set to the default they change nothing and get no warning; set to the other value they get one.
 */
export const featureGatesFollowedAtDefault: ReadonlyMap<string, boolean> = new Map([
  ['ExtendWebSocketsToKubelet', true],
  ['InPlacePodLevelResourcesVerticalScaling', true],
  ['InPlacePodVerticalScalingInitContainers', true],
  ['RestartAllContainersOnContainerExits', true],
  ['CSIServiceAccountTokenSecrets', true],
  ['MutableCSINodeAllocatableCount', true],
  // The client CA file is reloaded when it changes (server/tls.ts).
  ['ReloadKubeletClientCAFile', true],
  // Pods' and containers' figures come from their cgroups, as cAdvisor's do (kubelet_metrics_provider).
  ['PodAndContainerStatsFromCRI', false],
  // Beta and on in v1.36, and what tskubelet does (docs/compatibility.md).
  ['HostnameOverride', true],
  ['EnvFiles', true],
  ['ContainerRestartRules', true],
  ['PreventStaticPodAPIReferences', true],
  ['PodReadyToStartContainersCondition', true],
  ['ResourceHealthStatus', true],
  ['ResourceHealthStatusMessage', true],
  ['KubeletServiceAccountTokenForCredentialProviders', true],
  ['PodLevelResources', true],
  ['ContainerCheckpoint', true],
  ['PortForwardWebsockets', true],
  ['DRAExtendedResource', true],
  ['DRAConsumableCapacity', true],
  ['RotateKubeletServerCertificate', true],
  // The serving certificate and key files are read again when they change (server/tls.ts).
  ['ReloadKubeletServerCertificateFile', true],
  ['ComponentFlagz', true],
  ['ComponentStatusz', true],
  ['TopologyManagerPolicyBetaOptions', true],
  // Alpha or beta and off in v1.36, and not done by tskubelet: off asks for nothing.
  ['EventedPLEG', false],
  ['MemoryQoS', false],
  ['KubeletInUserNamespace', false],
  ['InPlacePodVerticalScalingExclusiveCPUs', false],
  ['InPlacePodVerticalScalingExclusiveMemory', false],
  ['LocalStorageCapacityIsolationFSQuotaMonitoring', false],
  ['UserNamespacesHostNetworkSupport', false],
  ['RuntimeClassInImageCriApi', false],
  ['SELinuxMount', false],
  ['CRIListStreaming', false],
  ['QOSReserved', false],
  ['PodLevelResourceManagers', false],
  ['ImageVolumeWithDigest', false],
  ['ReduceDefaultCrashLoopBackOffDecay', false],
  ['TopologyManagerPolicyAlphaOptions', false],
  ['CSIVolumeHealth', false],
]);

/** KubeletConfiguration (v1beta1) top-level fields not implemented yet. */
export const unimplementedConfigFields = new Set([
  'enableContentionProfiling',
  'qosReserved',
  'hairpinMode',
  'contentType',
  'enableControllerAttachDetach',
  'makeIPTablesUtilChains',
  'iptablesMasqueradeBit',
  'iptablesDropBit',
  'showHiddenMetricsForVersion',
  'volumePluginDir',
  'kernelMemcgNotification',
  'logging',
  'memoryThrottlingFactor',
  'tracing',
  'memoryReservationPolicy',
]);

const oneOf =
  (...values: unknown[]) =>
  (v: unknown) =>
    values.includes(v);

/**
 * Values of unimplemented fields that ask for what tskubelet does anyway (upstream's defaults or
 * no-ops with a CRI runtime): accepted without a warning, so a kubeadm-written config starts quietly.
 */
export const unimplementedButSatisfied: Record<string, (v: unknown) => boolean> = {
  // Hairpin traffic is the CNI plugin's business with a CRI runtime; the wire format of the apiserver client is not
  // observable.
  hairpinMode: () => true,
  contentType: () => true,
  enableControllerAttachDetach: () => true,
  makeIPTablesUtilChains: () => true,
  iptablesMasqueradeBit: () => true,
  iptablesDropBit: () => true,
  kernelMemcgNotification: oneOf(false),
  // Go's block profiling has no counterpart in V8; off (the default) asks for nothing.
  enableContentionProfiling: oneOf(false),
  memoryThrottlingFactor: () => true,
  // MemoryQoS's protection acts on cgroup v2 only; None (the default) asks for none.
  memoryReservationPolicy: oneOf('None', ''),
  // FlexVolume drivers are not run; at upstream's default directory (what /configz shows) nothing is asked of them.
  volumePluginDir: oneOf('/usr/libexec/kubernetes/kubelet-plugins/volume/exec/', ''),
  // The verbosity (as --v) and the format (text or json) are read; the rest tunes klog's buffering.
  logging: () => true,
};

/** Go kubelet flags not implemented yet (value-taking unless listed in `booleanFlags`). */
export const unimplementedFlags = new Set([
  'kube-api-content-type',
  'make-iptables-util-chains',
  'hairpin-mode',
  'volume-plugin-dir',
  'log-flush-frequency',
  'log-json-split-stream',
  'log-json-info-buffer-size',
  'vmodule',
  'contention-profiling',
  'experimental-allocatable-ignore-eviction',
  'topology-manager-policy-options',
  'qos-reserved',
  'experimental-mounter-path',
  'enable-controller-attach-detach',
  'kernel-memcg-notification',
  'log-text-info-buffer-size',
  'log-text-split-stream',
]);

/** Flags that take no value (`--flag` means true). */
export const booleanFlags = new Set([
  'help',
  'enable-controller-attach-detach',
  'fail-cgroupv1',
  'kernel-memcg-notification',
  'log-text-split-stream',
  'version',
  'cgroups-per-qos',
  'fail-swap-on',
  'rotate-certificates',
  'rotate-server-certificates',
  'serialize-image-pulls',
  'authentication-token-webhook',
  'anonymous-auth',
  'enable-debugging-handlers',
  'enable-server',
  'exit-on-lock-contention',
  'seccomp-default',
  'protect-kernel-defaults',
  'make-iptables-util-chains',
  'contention-profiling',
  'local-storage-capacity-isolation',
  'log-json-split-stream',
  'runonce',
  'cpu-cfs-quota',
  'experimental-allocatable-ignore-eviction',
]);
