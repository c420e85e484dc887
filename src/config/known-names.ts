/**
 * Names the Go kubelet accepts that tskubelet does not implement yet. They are accepted (the
 * drop-in rule: an existing node's config must start) with one warning each; names upstream does
 * not know are errors.
 */

/** KubeletConfiguration (v1beta1) top-level fields not implemented yet. */
export const unimplementedConfigFields = new Set([
  'enableServer', 'serverTLSBootstrap', 'registryPullQPS',
  'registryBurst', 'imagePullCredentialsVerificationPolicy', 'preloadedImagesVerificationAllowlist', 
  'enableContentionProfiling', 'oomScoreAdj', 
  'imageMaximumGCAge',
  'kubeletCgroups', 'systemCgroups',
  'cpuManagerPolicy', 'singleProcessOOMKill', 'cpuManagerPolicyOptions',
  'cpuManagerReconcilePeriod', 'memoryManagerPolicy', 'topologyManagerPolicy', 'topologyManagerScope',
  'topologyManagerPolicyOptions', 'qosReserved', 'runtimeRequestTimeout', 'hairpinMode', 'podCIDR', 'podPidsLimit',
  'runOnce', 'nodeStatusMaxImages', 'maxOpenFiles', 'contentType',
  'kubeAPIQPS', 'kubeAPIBurst', 'maxParallelImagePulls', 'evictionSoft',
  'evictionSoftGracePeriod', 'evictionPressureTransitionPeriod', 'evictionMaxPodGracePeriod', 'evictionMinimumReclaim',
  'podsPerCore', 'enableControllerAttachDetach', 'protectKernelDefaults', 'makeIPTablesUtilChains', 'iptablesMasqueradeBit',
  'iptablesDropBit', 'featureGates', 'failSwapOn', 'memorySwap',
  'containerLogMaxWorkers', 'configMapAndSecretChangeDetectionStrategy', 
  'reservedSystemCPUs', 'showHiddenMetricsForVersion', 'systemReservedCgroup', 'kubeReservedCgroup',
  'enforceNodeAllocatable', 'volumePluginDir', 'kernelMemcgNotification', 'logging',
  'enableSystemLogQuery', 'shutdownGracePeriodCriticalPods',
  'shutdownGracePeriodByPodPriority', 'crashLoopBackOff', 'reservedMemory', 'enableProfilingHandler', 'enableDebugFlagsHandler',
  'seccompDefault', 'memoryThrottlingFactor', 'tracing', 'localStorageCapacityIsolation',
  'imageServiceEndpoint', 'failCgroupV1', 'userNamespaces', 'mergeDefaultEvictionSettings',
]);

/** Go kubelet flags not implemented yet (value-taking unless listed in `booleanFlags`). */
export const unimplementedFlags = new Set([
  'register-schedulable',
  'cloud-provider', 'cloud-config', 'runtime-cgroups', 'kubelet-cgroups', 'system-cgroups', 
  'image-service-endpoint',
  'eviction-soft', 'eviction-soft-grace-period', 'eviction-pressure-transition-period', 'eviction-max-pod-grace-period',
  'eviction-minimum-reclaim', 'fail-swap-on', 'feature-gates', 'rotate-server-certificates', 'runtime-request-timeout',
  'max-open-files', 
  'enable-debugging-handlers', 'enable-server', 'kube-api-qps', 'kube-api-burst', 'kube-api-content-type',
  'lock-file', 'exit-on-lock-contention', 'seccomp-default', 'pod-cidr', 'pods-per-core',
  'pod-max-pids', 'protect-kernel-defaults', 'make-iptables-util-chains', 'hairpin-mode', 'oom-score-adj', 'volume-plugin-dir',
  'volume-stats-agg-period', 'node-status-max-images', 
  'logging-format', 'log-flush-frequency',
  'log-json-split-stream', 'log-json-info-buffer-size', 'vmodule', 'contention-profiling', 'profiling', 'topology-manager-policy',
  'cpu-manager-policy', 'memory-manager-policy', 'reserved-cpus', 
  'keep-terminated-pod-volumes', 'experimental-allocatable-ignore-eviction', 'local-storage-capacity-isolation',
  'enforce-node-allocatable', 'seccomp-profile-root', 'image-credential-provider-config',
  'image-credential-provider-bin-dir', 'tls-sni-cert-key', 'system-reserved-cgroup', 'kube-reserved-cgroup', 'runonce',
  'registry-qps', 'registry-burst', 'max-parallel-image-pulls',
]);

/** Flags that take no value (`--flag` means true). */
export const booleanFlags = new Set([
  'help', 'version', 'register-schedulable', 'cgroups-per-qos', 'fail-swap-on', 'rotate-certificates',
  'rotate-server-certificates', 'serialize-image-pulls', 'authentication-token-webhook', 'anonymous-auth',
  'enable-debugging-handlers', 'enable-server', 'exit-on-lock-contention', 'seccomp-default', 'protect-kernel-defaults',
  'make-iptables-util-chains', 'contention-profiling', 'profiling', 'keep-terminated-pod-volumes', 'local-storage-capacity-isolation',
  'log-json-split-stream', 'runonce', 'cpu-cfs-quota', 'experimental-allocatable-ignore-eviction',
]);
