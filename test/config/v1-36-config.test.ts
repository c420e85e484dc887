/**
 * The KubeletConfiguration of v1.36: every field upstream's v1beta1 type has is accepted (an
 * existing node's config must start), the v1.36 defaults and validation rules hold, and the host
 * rules (cgroup v1) refuse as upstream.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags } from '../../src/config/flags.js';
import { loadConfig } from '../../src/config/load.js';
import { hostConfigErrors } from '../../src/config/validate.js';
import { agentConfigOf } from '../../src/config/agent-config-of.js';
import { opensslHasGroup } from '../../src/lib/openssl-groups.js';
import { backoffRemaining, containerBackoffPolicyWith, nextBackoff } from '../../src/agent/sync/backoff.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cfg136-'));
let count = 0;
const load = (yaml: string, flags: string[] = []) => {
  const path = join(dir, `c${count++}.yaml`);
  writeFileSync(path, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${yaml}`);
  return loadConfig(parseFlags(['--config', path, '--kubeconfig', '/etc/kubernetes/kubelet.conf', ...flags]));
};

/**
 * Each field of staging/src/k8s.io/kubelet/config/v1beta1 KubeletConfiguration at v1.36 with a
 * value upstream's validation accepts on a Linux node without an apiserver.
 */
const V1_36_FIELDS = `enableServer: true
staticPodPath: /etc/kubernetes/manifests
podLogsDir: /var/log/pods
syncFrequency: 1m0s
fileCheckFrequency: 20s
httpCheckFrequency: 20s
staticPodURLHeader: {}
address: 0.0.0.0
port: 10250
readOnlyPort: 0
tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
tlsCurvePreferences: []
tlsMinVersion: VersionTLS12
rotateCertificates: false
serverTLSBootstrap: false
authentication: {x509: {}, webhook: {enabled: false, cacheTTL: 2m0s}, anonymous: {enabled: false}}
authorization: {mode: AlwaysAllow, webhook: {cacheAuthorizedTTL: 5m0s, cacheUnauthorizedTTL: 30s}}
registryPullQPS: 5
registryBurst: 10
imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages
preloadedImagesVerificationAllowlist: []
eventRecordQPS: 50
eventBurst: 100
enableDebuggingHandlers: true
enableContentionProfiling: false
healthzPort: 10248
healthzBindAddress: 127.0.0.1
oomScoreAdj: -999
clusterDomain: cluster.local
clusterDNS: [10.96.0.10]
streamingConnectionIdleTimeout: 4h0m0s
nodeStatusUpdateFrequency: 10s
nodeStatusReportFrequency: 5m0s
nodeLeaseDurationSeconds: 40
imageMinimumGCAge: 2m0s
imageMaximumGCAge: 0s
imageGCHighThresholdPercent: 85
imageGCLowThresholdPercent: 80
volumeStatsAggPeriod: 1m0s
kubeletCgroups: ""
systemCgroups: ""
cgroupRoot: ""
cgroupsPerQOS: true
cgroupDriver: cgroupfs
cpuManagerPolicy: none
singleProcessOOMKill: true
cpuManagerPolicyOptions: {}
cpuManagerReconcilePeriod: 10s
draManagerReconcilePeriod: 1m0s
memoryManagerPolicy: None
topologyManagerPolicy: none
topologyManagerScope: container
topologyManagerPolicyOptions: {}
qosReserved: {}
runtimeRequestTimeout: 2m0s
hairpinMode: promiscuous-bridge
maxPods: 110
podCIDR: ""
podPidsLimit: -1
resolvConf: /etc/resolv.conf
runOnce: false
cpuCFSQuota: true
cpuCFSQuotaPeriod: 100ms
nodeStatusMaxImages: 50
maxOpenFiles: 1000000
contentType: application/vnd.kubernetes.protobuf
kubeAPIQPS: 50
kubeAPIBurst: 100
serializeImagePulls: true
evictionHard: {memory.available: 100Mi}
evictionSoft: {}
evictionSoftGracePeriod: {}
evictionPressureTransitionPeriod: 5m0s
evictionMaxPodGracePeriod: 0
evictionMinimumReclaim: {}
mergeDefaultEvictionSettings: false
podsPerCore: 0
enableControllerAttachDetach: true
protectKernelDefaults: false
makeIPTablesUtilChains: true
iptablesMasqueradeBit: 14
iptablesDropBit: 15
featureGates: {}
failSwapOn: false
memorySwap: {swapBehavior: NoSwap}
containerLogMaxSize: 10Mi
containerLogMaxFiles: 5
containerLogMaxWorkers: 1
containerLogMonitorInterval: 10s
configMapAndSecretChangeDetectionStrategy: Watch
systemReserved: {}
kubeReserved: {}
reservedSystemCPUs: ""
showHiddenMetricsForVersion: ""
systemReservedCgroup: ""
kubeReservedCgroup: ""
enforceNodeAllocatable: [pods]
allowedUnsafeSysctls: []
volumePluginDir: /usr/libexec/kubernetes/kubelet-plugins/volume/exec/
providerID: ""
kernelMemcgNotification: false
logging: {format: text, verbosity: 0}
enableSystemLogHandler: true
enableSystemLogQuery: false
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
shutdownGracePeriodByPodPriority: []
crashLoopBackOff: {maxContainerRestartPeriod: 5m0s}
reservedMemory: []
enableProfilingHandler: true
enableDebugFlagsHandler: true
seccompDefault: false
memoryThrottlingFactor: 0.9
memoryReservationPolicy: None
registerWithTaints: []
registerNode: true
localStorageCapacityIsolation: true
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
imageServiceEndpoint: ""
failCgroupV1: false
userNamespaces: {idsPerPod: 65536}
`;

describe('KubeletConfiguration v1.36', () => {
  it('accepts every field of the v1.36 type', async () => {
    const config = await load(V1_36_FIELDS);
    expect(config.kc.failCgroupV1).toBe(false);
    expect(config.kc.crashLoopBackOff.maxContainerRestartPeriod).toBe('5m0s');
    expect(config.kc.userNamespaces.idsPerPod).toBe(65536);
  });

  it('keeps ConfigMaps and Secrets as configMapAndSecretChangeDetectionStrategy says (Watch by default)', async () => {
    expect(agentConfigOf(await load('')).objectChangeDetection).toBe('Watch');
    for (const strategy of ['Get', 'Cache', 'Watch'])
      expect(
        agentConfigOf(await load(`configMapAndSecretChangeDetectionStrategy: ${strategy}`)).objectChangeDetection,
      ).toBe(strategy);
    await expect(load('configMapAndSecretChangeDetectionStrategy: Poll')).rejects.toThrow(
      'unknown configmap and secret manager mode: Poll',
    );
  });

  it('reads tlsCurvePreferences as Go tls.CurveID values (or names), refusing unknown ones', async () => {
    const config = await load('tlsCurvePreferences: [29, 23, secp384r1]');
    expect([config.kc.tlsCurvePreferences, config.warnings]).toEqual([[29, 23, 'secp384r1'], []]);
    await expect(load('tlsCurvePreferences: [7]')).rejects.toThrow(
      'invalid value for field "tlsCurvePreferences": unknown curve 7',
    );
    // A post-quantum hybrid this Node's OpenSSL may lack is left out with a warning, not a refusal.
    const hybrid = await load('tlsCurvePreferences: [4588, 29]');
    const lacks = !opensslHasGroup('X25519MLKEM768');
    expect(hybrid.warnings.some((w) => w.startsWith('tlsCurvePreferences: X25519MLKEM768 not offered'))).toBe(lacks);
  });

  it('defaults failCgroupV1 to true, and --fail-cgroupv1 overrides the file', async () => {
    expect((await load('')).kc.failCgroupV1).toBe(true);
    expect((await load('failCgroupV1: true\n', ['--fail-cgroupv1=false'])).kc.failCgroupV1).toBe(false);
  });

  it('refuses a cgroup v1 host unless failCgroupV1 is false, with upstream message', async () => {
    const strict = (await load('')).kc;
    expect(hostConfigErrors(strict, { cgroupVersion: 1 })).toEqual([
      'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release',
    ]);
    expect(hostConfigErrors(strict, { cgroupVersion: 2 })).toEqual([]);
    const allowed = (await load('failCgroupV1: false\n')).kc;
    expect(hostConfigErrors(allowed, { cgroupVersion: 1 })).toEqual([]);
    const noGroupKill = (await load('failCgroupV1: false\nsingleProcessOOMKill: false\n')).kc;
    expect(hostConfigErrors(noGroupKill, { cgroupVersion: 1 })).toEqual([
      'invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1',
    ]);
    expect(hostConfigErrors(noGroupKill, { cgroupVersion: 2 })).toEqual([]);
  });

  it('validates crashLoopBackOff.maxContainerRestartPeriod and userNamespaces.idsPerPod in upstream words', async () => {
    await expect(load('crashLoopBackOff: {maxContainerRestartPeriod: 500ms}\n')).rejects.toThrow(
      'invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0.5 seconds) must be set between 1s and 300s',
    );
    await expect(load('crashLoopBackOff: {maxContainerRestartPeriod: 6m}\n')).rejects.toThrow(
      '(got: 360 seconds) must be set between 1s and 300s',
    );
    await expect(
      load('crashLoopBackOff: {maxContainerRestartPeriod: 30s}\nfeatureGates: {KubeletCrashLoopBackOffMax: false}\n'),
    ).rejects.toThrow('FeatureGate KubeletCrashLoopBackOffMax not enabled');
    await expect(load('userNamespaces: {idsPerPod: 1000}\n')).rejects.toThrow(
      'invalid configuration: userNamespaces.idsPerPod must not be less than 65536',
    );
    await expect(load('userNamespaces: {idsPerPod: 100000}\n')).rejects.toThrow(
      'invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536',
    );
    await expect(load('userNamespaces: {idsPerPod: 4295032832}\n')).rejects.toThrow(
      'userNamespaces.idsPerPod must not be more than 4294967295',
    );
    await expect(load('userNamespaces: {idsPerPod: 131072}\n')).resolves.toBeDefined();
  });

  it('caps the crash-loop backoff at maxContainerRestartPeriod; a cap under 10 s is a constant interval', async () => {
    const thirty = agentConfigOf(await load('crashLoopBackOff: {maxContainerRestartPeriod: 30s}\n'));
    const policy = containerBackoffPolicyWith(thirty.maxContainerRestartPeriodMs);
    let entry = nextBackoff(undefined, 0, 0, policy);
    const delays = [entry.delayMs];
    for (let i = 1; i < 5; i++) {
      entry = nextBackoff(entry, i, i, policy);
      delays.push(entry.delayMs);
    }
    expect(delays).toEqual([10_000, 20_000, 30_000, 30_000, 30_000]);
    const two = containerBackoffPolicyWith(2000);
    const first = nextBackoff(undefined, 0, 0, two);
    expect([first.delayMs, nextBackoff(first, 1, 1, two).delayMs]).toEqual([2000, 2000]);
    expect(backoffRemaining(first, 0, 500, two)).toBe(1500);
    const unset = agentConfigOf(await load(''));
    expect(containerBackoffPolicyWith(unset.maxContainerRestartPeriodMs)).toEqual({
      initialMs: 10_000,
      maxMs: 300_000,
    });
  });
});
