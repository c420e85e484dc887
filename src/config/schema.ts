/**
 * KubeletConfiguration (kubelet.config.k8s.io/v1beta1) as a zod schema: the fields tskubelet
 * implements, with upstream names and defaults. Durations are Go duration strings.
 */
import { z } from 'zod';
import { parseDuration } from '../lib/duration.js';

const duration = z
  .string()
  .refine((s) => parseDuration(s) !== undefined && parseDuration(s)! >= 0, { message: 'must be a Go duration such as "20s" or "1m0s"' });
const port = z.number().int().min(0).max(65535);

/** The implemented fields (strict: unknown names are checked against known-names.ts first). */
export const kubeletConfigSchema = z
  .object({
    apiVersion: z.literal('kubelet.config.k8s.io/v1beta1').optional(),
    kind: z.literal('KubeletConfiguration').optional(),
    staticPodPath: z.string().optional(),
    staticPodURL: z.string().url().optional(),
    staticPodURLHeader: z.record(z.string(), z.array(z.string())).default({}),
    fileCheckFrequency: duration.default('20s'),
    httpCheckFrequency: duration.default('20s'),
    syncFrequency: duration.default('1m0s'),
    address: z.string().default('0.0.0.0'),
    port: port.default(10250),
    readOnlyPort: port.default(0),
    healthzPort: port.default(10248),
    healthzBindAddress: z.string().default('127.0.0.1'),
    tlsCertFile: z.string().optional(),
    tlsPrivateKeyFile: z.string().optional(),
    tlsMinVersion: z.string().optional(),
    tlsCipherSuites: z.array(z.string()).optional(),
    authentication: z
      .object({
        x509: z.object({ clientCAFile: z.string().optional() }).strict().default({}),
        webhook: z
          .object({ enabled: z.boolean().default(true), cacheTTL: duration.default('2m0s') })
          .strict()
          .default({ enabled: true, cacheTTL: '2m0s' }),
        anonymous: z
          .object({ enabled: z.boolean().default(false) })
          .strict()
          .default({ enabled: false }),
      })
      .strict()
      .default({ x509: {}, webhook: { enabled: true, cacheTTL: '2m0s' }, anonymous: { enabled: false } }),
    authorization: z
      .object({
        mode: z.enum(['AlwaysAllow', 'Webhook']).default('Webhook'),
        webhook: z
          .object({ cacheAuthorizedTTL: duration.default('5m0s'), cacheUnauthorizedTTL: duration.default('30s') })
          .strict()
          .default({ cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' }),
      })
      .strict()
      .default({ mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } }),
    podLogsDir: z.string().default('/var/log/pods'),
    maxPods: z.number().int().min(1).default(110),
    containerRuntimeEndpoint: z.string().default(''),
    enableDebuggingHandlers: z.boolean().default(true),
    enableSystemLogHandler: z.boolean().default(true),
    streamingConnectionIdleTimeout: duration.default('4h0m0s'),
    shutdownGracePeriod: duration.default('0s'),
    volumeStatsAggPeriod: duration.default('1m0s'),
    containerLogMaxSize: z.string().default('10Mi'),
    containerLogMaxFiles: z.number().int().min(2).default(5),
    containerLogMonitorInterval: duration.default('10s'),
    allowedUnsafeSysctls: z.array(z.string()).default([]),
    clusterDNS: z.array(z.string()).default([]),
    clusterDomain: z.string().default(''),
    resolvConf: z.string().default('/etc/resolv.conf'),
    cgroupsPerQOS: z.boolean().default(true),
    cgroupRoot: z.string().default(''),
    kubeletCgroups: z.string().default(''),
    systemCgroups: z.string().default(''),
    cgroupDriver: z.enum(['cgroupfs', 'systemd']).default('cgroupfs'),
    cpuCFSQuota: z.boolean().default(true),
    cpuCFSQuotaPeriod: duration.default('100ms'),
    serializeImagePulls: z.boolean().default(true),
    imageGCHighThresholdPercent: z.number().int().min(0).max(100).default(85),
    imageGCLowThresholdPercent: z.number().int().min(0).max(100).default(80),
    imageMinimumGCAge: duration.default('2m0s'),
    registerNode: z.boolean().default(true),
    rotateCertificates: z.boolean().default(false),
    registerWithTaints: z
      .array(z.object({ key: z.string(), value: z.string().optional(), effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']) }).strict())
      .default([]),
    providerID: z.string().default(''),
    nodeStatusUpdateFrequency: duration.default('10s'),
    nodeStatusReportFrequency: duration.default('5m0s'),
    nodeLeaseDurationSeconds: z.number().int().min(1).default(40),
    eventRecordQPS: z.number().min(0).default(50),
    eventBurst: z.number().int().min(0).default(100),
    kubeReserved: z.record(z.string(), z.string()).default({}),
    systemReserved: z.record(z.string(), z.string()).default({}),
    evictionHard: z
      .record(z.string(), z.string())
      .default({ 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' }),
  })
  .strict();

/** The parsed configuration with defaults applied. */
export type KubeletConfiguration = z.infer<typeof kubeletConfigSchema>;
