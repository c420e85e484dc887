/**
 * KubeletConfiguration (kubelet.config.k8s.io/v1beta1) as a zod schema: the fields tskubelet
 * implements, with upstream names and defaults. Durations are Go duration strings.
 */
import * as z from 'zod/mini';
import '../lib/zod.js';
import { parseDuration } from '../lib/duration.js';
import { parseQuantity } from '../api/quantity.js';

const duration = z.string().check(
  z.refine((s) => parseDuration(s) !== undefined && parseDuration(s)! >= 0, {
    message: 'must be a Go duration such as "20s" or "1m0s"',
  }),
);
/** A duration whose sign the validation judges, with upstream's message (the image GC ages). */
const signedDuration = z
  .string()
  .check(z.refine((s) => parseDuration(s) !== undefined, { message: 'must be a Go duration such as "20s" or "1m0s"' }));
/** A resource quantity ("1Gi", or a plain number of bytes), as Go's resource.Quantity decodes it. */
const quantity = z
  .union([z.string(), z.number()])
  .check(z.refine((q) => parseQuantity(q) !== undefined, { message: 'must be a quantity such as "100Mi" or "1G"' }));
const port = z.int().check(z.minimum(0), z.maximum(65535));
const opt = z.optional;
const def = z._default;

/** Upstream's default hard eviction thresholds (Linux). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
};

/** The implemented fields (strict: unknown names are checked against known-names.ts first). */
export const kubeletConfigSchema = z.strictObject({
  apiVersion: opt(z.literal('kubelet.config.k8s.io/v1beta1')),
  kind: opt(z.literal('KubeletConfiguration')),
  staticPodPath: opt(z.string()),
  staticPodURL: opt(z.url()),
  staticPodURLHeader: def(z.record(z.string(), z.array(z.string())), {}),
  fileCheckFrequency: def(duration, '20s'),
  httpCheckFrequency: def(duration, '20s'),
  syncFrequency: def(duration, '1m0s'),
  // Checked as upstream's NewMainKubelet checks it (validate.ts).
  configMapAndSecretChangeDetectionStrategy: def(z.string(), 'Watch'),
  address: def(z.string(), '0.0.0.0'),
  port: def(port, 10250),
  readOnlyPort: def(port, 0),
  healthzPort: def(port, 10248),
  healthzBindAddress: def(z.string(), '127.0.0.1'),
  tlsCertFile: opt(z.string()),
  tlsPrivateKeyFile: opt(z.string()),
  tlsMinVersion: opt(z.string()),
  tlsCipherSuites: opt(z.array(z.string())),
  // Go's tls.CurveID values (names accepted too); the TLS server offers those groups, in that order.
  tlsCurvePreferences: opt(z.array(z.union([z.int(), z.string()]))),
  authentication: def(
    z.strictObject({
      x509: def(z.strictObject({ clientCAFile: opt(z.string()) }), {}),
      webhook: def(z.strictObject({ enabled: def(z.boolean(), true), cacheTTL: def(duration, '2m0s') }), {
        enabled: true,
        cacheTTL: '2m0s',
      }),
      anonymous: def(z.strictObject({ enabled: def(z.boolean(), false) }), { enabled: false }),
    }),
    { x509: {}, webhook: { enabled: true, cacheTTL: '2m0s' }, anonymous: { enabled: false } },
  ),
  authorization: def(
    z.strictObject({
      mode: def(z.enum(['AlwaysAllow', 'Webhook']), 'Webhook'),
      webhook: def(
        z.strictObject({ cacheAuthorizedTTL: def(duration, '5m0s'), cacheUnauthorizedTTL: def(duration, '30s') }),
        {
          cacheAuthorizedTTL: '5m0s',
          cacheUnauthorizedTTL: '30s',
        },
      ),
    }),
    { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } },
  ),
  podLogsDir: def(z.string(), '/var/log/pods'),
  maxPods: def(z.int().check(z.minimum(1)), 110),
  containerRuntimeEndpoint: def(z.string(), ''),
  enableDebuggingHandlers: def(z.boolean(), true),
  enableSystemLogHandler: def(z.boolean(), true),
  enableSystemLogQuery: def(z.boolean(), false),
  enableDebugFlagsHandler: def(z.boolean(), true),
  enableProfilingHandler: def(z.boolean(), true),
  streamingConnectionIdleTimeout: def(duration, '4h0m0s'),
  runtimeRequestTimeout: def(duration, '2m0s'),
  shutdownGracePeriod: def(duration, '0s'),
  volumeStatsAggPeriod: def(duration, '1m0s'),
  containerLogMaxSize: def(z.string(), '10Mi'),
  containerLogMaxFiles: def(z.int().check(z.minimum(2)), 5),
  containerLogMonitorInterval: def(duration, '10s'),
  containerLogMaxWorkers: def(z.int(), 1),
  allowedUnsafeSysctls: def(z.array(z.string()), []),
  clusterDNS: def(z.array(z.string()), []),
  clusterDomain: def(z.string(), ''),
  resolvConf: def(z.string(), '/etc/resolv.conf'),
  cgroupsPerQOS: def(z.boolean(), true),
  cgroupRoot: def(z.string(), ''),
  kubeletCgroups: def(z.string(), ''),
  systemCgroups: def(z.string(), ''),
  cgroupDriver: def(z.enum(['cgroupfs', 'systemd']), 'cgroupfs'),
  /** Gate name → on/off; absent when none is set (upstream omits it then). load.ts says which are read. */
  featureGates: opt(z.record(z.string(), z.boolean())),
  cpuCFSQuota: def(z.boolean(), true),
  cpuCFSQuotaPeriod: def(duration, '100ms'),
  serializeImagePulls: def(z.boolean(), true),
  /** Who may use an image already on the node (KubeletEnsureSecretPulledImages; agent/images/pull-records.ts). */
  imagePullCredentialsVerificationPolicy: def(
    z.enum(['NeverVerify', 'NeverVerifyPreloadedImages', 'NeverVerifyAllowlistedImages', 'AlwaysVerify']),
    'NeverVerifyPreloadedImages',
  ),
  preloadedImagesVerificationAllowlist: def(z.array(z.string()), []),
  maxParallelImagePulls: opt(z.int()),
  registryPullQPS: def(z.int(), 5),
  registryBurst: def(z.int(), 10),
  imageMaximumGCAge: def(signedDuration, '0s'),
  nodeStatusMaxImages: def(z.int(), 50),
  podsPerCore: def(z.int(), 0),
  kubeAPIQPS: def(z.number(), 50),
  kubeAPIBurst: def(z.int(), 100),
  oomScoreAdj: def(z.int(), -999),
  enableServer: def(z.boolean(), true),
  runOnce: def(z.boolean(), false),
  shutdownGracePeriodCriticalPods: def(duration, '0s'),
  shutdownGracePeriodByPodPriority: def(
    z.array(z.strictObject({ priority: z.int(), shutdownGracePeriodSeconds: z.int().check(z.minimum(0)) })),
    [],
  ),
  seccompDefault: def(z.boolean(), false),
  imageServiceEndpoint: def(z.string(), ''),
  podPidsLimit: def(z.int(), -1),
  /** The kubelet's own RLIMIT_NOFILE (lib/rlimit.ts). */
  maxOpenFiles: def(z.int(), 1000000),
  /** The CPU manager (agent/cpumanager): `none`, or `static` (exclusive CPUs for Guaranteed pods' integer requests). */
  cpuManagerPolicy: def(z.enum(['none', 'static']), 'none'),
  cpuManagerReconcilePeriod: def(duration, '10s'),
  /** How often the DRA manager unprepares the claims of pods no longer active (agent/dra/dra-manager.ts). */
  draManagerReconcilePeriod: def(duration, '1m0s'),
  /** The static policy's options (agent/cpumanager/policy-options.ts). */
  cpuManagerPolicyOptions: opt(z.record(z.string(), z.string())),
  /** CPUs kept for the system (kernel list format); overrides kube- and system-reserved cpu. */
  reservedSystemCPUs: opt(z.string()),
  /**
   * The memory manager (agent/memorymanager/): `None`, or `Static` (Guaranteed pods' memory and huge pages on NUMA
   * nodes of their own); another name stops the start with upstream's message.
   */
  memoryManagerPolicy: def(z.string(), 'None'),
  /** The memory and huge pages kept from pods on each NUMA node (the Static policy; reserved-memory.ts). */
  reservedMemory: def(
    z.array(z.strictObject({ numaNode: z.int(), limits: def(z.record(z.string(), quantity), {}) })),
    [],
  ),
  /** The topology manager (agent/topologymanager/), the device, CPU and memory managers its hint providers. */
  topologyManagerPolicy: def(z.string(), 'none'),
  topologyManagerScope: def(z.string(), 'container'),
  /** prefer-closest-numa-nodes and max-allowable-numa-nodes (agent/topologymanager/policy-options.ts). */
  topologyManagerPolicyOptions: opt(z.record(z.string(), z.string())),
  /** memorySwap.swapBehavior: "" or NoSwap (no swap for containers), or LimitedSwap (runtime/swap.ts). */
  memorySwap: def(z.strictObject({ swapBehavior: opt(z.string()) }), {}),
  localStorageCapacityIsolation: def(z.boolean(), true),
  protectKernelDefaults: def(z.boolean(), false),
  failSwapOn: def(z.boolean(), true),
  /** Refuse to start on a cgroup v1 host (v1.35+ default); main.ts checks it against the host. */
  failCgroupV1: def(z.boolean(), true),
  /** Unset: per-container OOM kill groups on cgroup v2 (memory.oom.group); cgroup v1 allows only unset or true. */
  singleProcessOOMKill: opt(z.boolean()),
  /** The crash-loop backoff's cap (KubeletCrashLoopBackOffMax, beta and on): between 1s and 300s. */
  crashLoopBackOff: def(z.strictObject({ maxContainerRestartPeriod: opt(duration) }), {}),
  /** The length of each pod's UID/GID range with hostUsers: false (validated; passed to no runtime yet). */
  userNamespaces: def(z.strictObject({ idsPerPod: opt(z.int()) }), {}),
  enforceNodeAllocatable: def(
    z.array(
      z.enum([
        'pods',
        'system-reserved',
        'kube-reserved',
        'system-reserved-compressible',
        'kube-reserved-compressible',
        'none',
      ]),
    ),
    ['pods'],
  ),
  /**
   * The existing cgroups enforceNodeAllocatable system-reserved / kube-reserved cap (cgroupfs names, e.g.
   * "/system.slice").
   */
  systemReservedCgroup: def(z.string(), ''),
  kubeReservedCgroup: def(z.string(), ''),
  imageGCHighThresholdPercent: def(z.int().check(z.minimum(0), z.maximum(100)), 85),
  imageGCLowThresholdPercent: def(z.int().check(z.minimum(0), z.maximum(100)), 80),
  imageMinimumGCAge: def(signedDuration, '2m0s'),
  registerNode: def(z.boolean(), true),
  rotateCertificates: def(z.boolean(), false),
  serverTLSBootstrap: def(z.boolean(), false),
  evictionPressureTransitionPeriod: def(duration, '5m0s'),
  evictionSoft: def(z.record(z.string(), z.string()), {}),
  evictionSoftGracePeriod: def(z.record(z.string(), z.string()), {}),
  evictionMaxPodGracePeriod: def(z.int(), 0),
  evictionMinimumReclaim: def(z.record(z.string(), z.string()), {}),
  registerWithTaints: def(
    z.array(
      z.strictObject({
        key: z.string(),
        value: opt(z.string()),
        effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
      }),
    ),
    [],
  ),
  providerID: def(z.string(), ''),
  podCIDR: def(z.string(), ''),
  nodeStatusUpdateFrequency: def(duration, '10s'),
  nodeStatusReportFrequency: def(duration, '5m0s'),
  nodeLeaseDurationSeconds: def(z.int().check(z.minimum(1)), 40),
  eventRecordQPS: def(z.number().check(z.minimum(0)), 50),
  eventBurst: def(z.int().check(z.minimum(0)), 100),
  kubeReserved: def(z.record(z.string(), z.string()), {}),
  systemReserved: def(z.record(z.string(), z.string()), {}),
  evictionHard: def(z.record(z.string(), z.string()), DEFAULT_EVICTION_HARD),
  /** Signals evictionHard leaves out keep their defaults (v1.34+). */
  mergeDefaultEvictionSettings: def(z.boolean(), false),
});

/** The parsed configuration with defaults applied. */
export type KubeletConfiguration = z.infer<typeof kubeletConfigSchema>;
