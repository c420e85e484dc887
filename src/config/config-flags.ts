/**
 * The Go kubelet's flags that set a KubeletConfiguration field: name → the field's path and how
 * the value is parsed (flags.ts parses the command line with it).
 */

export type Kind =
  | 'string'
  | 'int'
  | 'number'
  | 'bool'
  | 'duration'
  | 'headers'
  | 'list'
  | 'map'
  | 'eviction'
  | 'taints'
  | 'gates'
  | 'version'
  | 'reservedMemory';

/** Flags that set a config field (path into KubeletConfiguration). */
export const configFlags: Record<string, { path: string[]; kind: Kind }> = {
  'pod-manifest-path': { path: ['staticPodPath'], kind: 'string' },
  'manifest-url': { path: ['staticPodURL'], kind: 'string' },
  'manifest-url-header': { path: ['staticPodURLHeader'], kind: 'headers' },
  'file-check-frequency': { path: ['fileCheckFrequency'], kind: 'duration' },
  'http-check-frequency': { path: ['httpCheckFrequency'], kind: 'duration' },
  'sync-frequency': { path: ['syncFrequency'], kind: 'duration' },
  address: { path: ['address'], kind: 'string' },
  port: { path: ['port'], kind: 'int' },
  'read-only-port': { path: ['readOnlyPort'], kind: 'int' },
  'healthz-port': { path: ['healthzPort'], kind: 'int' },
  'healthz-bind-address': { path: ['healthzBindAddress'], kind: 'string' },
  'tls-cert-file': { path: ['tlsCertFile'], kind: 'string' },
  'tls-private-key-file': { path: ['tlsPrivateKeyFile'], kind: 'string' },
  'client-ca-file': { path: ['authentication', 'x509', 'clientCAFile'], kind: 'string' },
  'tls-min-version': { path: ['tlsMinVersion'], kind: 'string' },
  'tls-cipher-suites': { path: ['tlsCipherSuites'], kind: 'list' },
  'authentication-token-webhook': { path: ['authentication', 'webhook', 'enabled'], kind: 'bool' },
  'authentication-token-webhook-cache-ttl': { path: ['authentication', 'webhook', 'cacheTTL'], kind: 'duration' },
  'anonymous-auth': { path: ['authentication', 'anonymous', 'enabled'], kind: 'bool' },
  'authorization-mode': { path: ['authorization', 'mode'], kind: 'string' },
  'authorization-webhook-cache-authorized-ttl': {
    path: ['authorization', 'webhook', 'cacheAuthorizedTTL'],
    kind: 'duration',
  },
  'authorization-webhook-cache-unauthorized-ttl': {
    path: ['authorization', 'webhook', 'cacheUnauthorizedTTL'],
    kind: 'duration',
  },
  'max-pods': { path: ['maxPods'], kind: 'int' },
  'container-runtime-endpoint': { path: ['containerRuntimeEndpoint'], kind: 'string' },
  'pod-logs-dir': { path: ['podLogsDir'], kind: 'string' },
  'streaming-connection-idle-timeout': { path: ['streamingConnectionIdleTimeout'], kind: 'duration' },
  'runtime-request-timeout': { path: ['runtimeRequestTimeout'], kind: 'duration' },
  'cluster-dns': { path: ['clusterDNS'], kind: 'list' },
  'allowed-unsafe-sysctls': { path: ['allowedUnsafeSysctls'], kind: 'list' },
  'shutdown-grace-period': { path: ['shutdownGracePeriod'], kind: 'duration' },
  'container-log-max-size': { path: ['containerLogMaxSize'], kind: 'string' },
  'container-log-max-files': { path: ['containerLogMaxFiles'], kind: 'int' },
  'container-log-max-workers': { path: ['containerLogMaxWorkers'], kind: 'int' },
  'container-log-monitor-interval': { path: ['containerLogMonitorInterval'], kind: 'duration' },
  'cluster-domain': { path: ['clusterDomain'], kind: 'string' },
  'resolv-conf': { path: ['resolvConf'], kind: 'string' },
  'cgroups-per-qos': { path: ['cgroupsPerQOS'], kind: 'bool' },
  'cgroup-root': { path: ['cgroupRoot'], kind: 'string' },
  'kubelet-cgroups': { path: ['kubeletCgroups'], kind: 'string' },
  'system-cgroups': { path: ['systemCgroups'], kind: 'string' },
  'cgroup-driver': { path: ['cgroupDriver'], kind: 'string' },
  'system-reserved-cgroup': { path: ['systemReservedCgroup'], kind: 'string' },
  'kube-reserved-cgroup': { path: ['kubeReservedCgroup'], kind: 'string' },
  'feature-gates': { path: ['featureGates'], kind: 'gates' },
  'cpu-cfs-quota': { path: ['cpuCFSQuota'], kind: 'bool' },
  'cpu-cfs-quota-period': { path: ['cpuCFSQuotaPeriod'], kind: 'duration' },
  'serialize-image-pulls': { path: ['serializeImagePulls'], kind: 'bool' },
  'max-parallel-image-pulls': { path: ['maxParallelImagePulls'], kind: 'int' },
  'registry-qps': { path: ['registryPullQPS'], kind: 'int' },
  'registry-burst': { path: ['registryBurst'], kind: 'int' },
  'node-status-max-images': { path: ['nodeStatusMaxImages'], kind: 'int' },
  'pods-per-core': { path: ['podsPerCore'], kind: 'int' },
  'kube-api-qps': { path: ['kubeAPIQPS'], kind: 'number' },
  'kube-api-burst': { path: ['kubeAPIBurst'], kind: 'int' },
  'oom-score-adj': { path: ['oomScoreAdj'], kind: 'int' },
  'enable-server': { path: ['enableServer'], kind: 'bool' },
  runonce: { path: ['runOnce'], kind: 'bool' },
  'enable-debugging-handlers': { path: ['enableDebuggingHandlers'], kind: 'bool' },
  'seccomp-default': { path: ['seccompDefault'], kind: 'bool' },
  'image-service-endpoint': { path: ['imageServiceEndpoint'], kind: 'string' },
  'volume-stats-agg-period': { path: ['volumeStatsAggPeriod'], kind: 'duration' },
  'pod-max-pids': { path: ['podPidsLimit'], kind: 'int' },
  'max-open-files': { path: ['maxOpenFiles'], kind: 'int' },
  'cpu-manager-policy': { path: ['cpuManagerPolicy'], kind: 'string' },
  'cpu-manager-reconcile-period': { path: ['cpuManagerReconcilePeriod'], kind: 'duration' },
  'cpu-manager-policy-options': { path: ['cpuManagerPolicyOptions'], kind: 'map' },
  'reserved-cpus': { path: ['reservedSystemCPUs'], kind: 'string' },
  'memory-manager-policy': { path: ['memoryManagerPolicy'], kind: 'string' },
  'reserved-memory': { path: ['reservedMemory'], kind: 'reservedMemory' },
  'topology-manager-policy': { path: ['topologyManagerPolicy'], kind: 'string' },
  'topology-manager-scope': { path: ['topologyManagerScope'], kind: 'string' },
  'topology-manager-policy-options': { path: ['topologyManagerPolicyOptions'], kind: 'map' },
  'local-storage-capacity-isolation': { path: ['localStorageCapacityIsolation'], kind: 'bool' },
  'protect-kernel-defaults': { path: ['protectKernelDefaults'], kind: 'bool' },
  'fail-swap-on': { path: ['failSwapOn'], kind: 'bool' },
  'fail-cgroupv1': { path: ['failCgroupV1'], kind: 'bool' },
  'enforce-node-allocatable': { path: ['enforceNodeAllocatable'], kind: 'list' },
  'image-gc-high-threshold': { path: ['imageGCHighThresholdPercent'], kind: 'int' },
  'image-gc-low-threshold': { path: ['imageGCLowThresholdPercent'], kind: 'int' },
  'minimum-image-ttl-duration': { path: ['imageMinimumGCAge'], kind: 'duration' },
  'register-node': { path: ['registerNode'], kind: 'bool' },
  'register-with-taints': { path: ['registerWithTaints'], kind: 'taints' },
  'provider-id': { path: ['providerID'], kind: 'string' },
  'pod-cidr': { path: ['podCIDR'], kind: 'string' },
  'node-status-update-frequency': { path: ['nodeStatusUpdateFrequency'], kind: 'duration' },
  'event-qps': { path: ['eventRecordQPS'], kind: 'int' },
  'event-burst': { path: ['eventBurst'], kind: 'int' },
  'kube-reserved': { path: ['kubeReserved'], kind: 'map' },
  'system-reserved': { path: ['systemReserved'], kind: 'map' },
  'eviction-hard': { path: ['evictionHard'], kind: 'eviction' },
  'eviction-pressure-transition-period': { path: ['evictionPressureTransitionPeriod'], kind: 'duration' },
  'eviction-soft': { path: ['evictionSoft'], kind: 'eviction' },
  'eviction-soft-grace-period': { path: ['evictionSoftGracePeriod'], kind: 'map' },
  'eviction-max-pod-grace-period': { path: ['evictionMaxPodGracePeriod'], kind: 'int' },
  'eviction-minimum-reclaim': { path: ['evictionMinimumReclaim'], kind: 'map' },
  'rotate-certificates': { path: ['rotateCertificates'], kind: 'bool' },
  'rotate-server-certificates': { path: ['serverTLSBootstrap'], kind: 'bool' },
};
