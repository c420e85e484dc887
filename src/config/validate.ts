/**
 * The cross-field and range checks of upstream's ValidateKubeletConfiguration, with its messages,
 * for the fields tskubelet implements (pure). The zod schema checks each field's type first.
 */
import { parseDuration } from '../lib/duration.js';
import { goDuration } from '../lib/go-format.js';
import { parseCpuSet } from '../lib/cpuset.js';
import type { KubeletConfiguration } from './schema.js';
import { reservedMemoryErrors, type MemoryReservation } from '../agent/memorymanager/reserved-memory.js';

/** Every rule `kc` breaks, in upstream's words (empty when valid). */
export function configErrors(kc: KubeletConfiguration): string[] {
  const errs: string[] = [];
  const bad = (cond: boolean, msg: string) => {
    if (cond) errs.push(`invalid configuration: ${msg}`);
  };
  const negative = (v: number, field: string, flag: string) =>
    bad(v < 0, `${field} (--${flag}) ${v} must not be a negative number`);
  bad(
    kc.imageGCHighThresholdPercent < 100 && kc.imageGCLowThresholdPercent >= kc.imageGCHighThresholdPercent,
    `imageGCLowThresholdPercent (--image-gc-low-threshold) ${kc.imageGCLowThresholdPercent} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${kc.imageGCHighThresholdPercent}`,
  );
  const minAge = parseDuration(kc.imageMinimumGCAge)!;
  const maxAge = parseDuration(kc.imageMaximumGCAge)!;
  // A negative minimum age is refused from v1.36 (kubernetes/kubernetes#135997), as a negative maximum age was before.
  bad(minAge < 0, `imageMinimumGCAge ${goDuration(minAge)} must not be negative`);
  bad(maxAge < 0, `imageMaximumGCAge ${goDuration(maxAge)} must not be negative`);
  bad(
    maxAge > 0 && maxAge <= minAge,
    `imageMaximumGCAge ${kc.imageMaximumGCAge} must be greater than imageMinimumGCAge ${kc.imageMinimumGCAge}`,
  );
  negative(kc.kubeAPIBurst, 'kubeAPIBurst', 'kube-api-burst');
  negative(kc.kubeAPIQPS, 'kubeAPIQPS', 'kube-api-qps');
  bad(
    kc.nodeStatusMaxImages < -1,
    `nodeStatusMaxImages (--node-status-max-images) ${kc.nodeStatusMaxImages} must be -1 or greater`,
  );
  bad(
    kc.oomScoreAdj < -1000 || kc.oomScoreAdj > 1000,
    `oomScoreAdj (--oom-score-adj) ${kc.oomScoreAdj} must be between -1000 and 1000, inclusive`,
  );
  negative(kc.podsPerCore, 'podsPerCore', 'pods-per-core');
  negative(kc.registryBurst, 'registryBurst', 'registry-burst');
  negative(kc.registryPullQPS, 'registryPullQPS', 'registry-qps');
  const parallel = kc.maxParallelImagePulls;
  bad(parallel !== undefined && parallel < 1, `maxParallelImagePulls ${parallel} must be a positive number`);
  bad(
    kc.serializeImagePulls && parallel !== undefined && parallel > 1,
    'maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false',
  );
  const grace = parseDuration(kc.shutdownGracePeriod)!;
  const critical = parseDuration(kc.shutdownGracePeriodCriticalPods)!;
  bad(
    critical > grace,
    `shutdownGracePeriodCriticalPods ${kc.shutdownGracePeriodCriticalPods} must be <= shutdownGracePeriod ${kc.shutdownGracePeriod}`,
  );
  bad(
    grace > 0 && grace < 1000,
    `shutdownGracePeriod ${kc.shutdownGracePeriod} must be either zero or otherwise >= 1 sec`,
  );
  bad(
    kc.shutdownGracePeriodByPodPriority.length > 0 && (grace > 0 || critical > 0),
    'Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
  );
  bad(
    critical > 0 && critical < 1000,
    `shutdownGracePeriodCriticalPods ${kc.shutdownGracePeriodCriticalPods} must be either zero or otherwise >= 1 sec`,
  );
  if (kc.reservedSystemCPUs) {
    bad(
      kc.systemReservedCgroup !== '' || kc.kubeReservedCgroup !== '',
      "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)",
    );
    try {
      parseCpuSet(kc.reservedSystemCPUs);
    } catch (err) {
      bad(
        true,
        `unable to parse reservedSystemCPUs (--reserved-cpus) ${kc.reservedSystemCPUs}, error: ${(err as Error).message}`,
      );
    }
  }
  bad(
    !['none', 'best-effort', 'restricted', 'single-numa-node'].includes(kc.topologyManagerPolicy),
    `topologyManagerPolicy (--topology-manager-policy) ${JSON.stringify(kc.topologyManagerPolicy)} must be one of: ["none" "best-effort" "restricted" "single-numa-node"]`,
  );
  bad(
    !['container', 'pod'].includes(kc.topologyManagerScope),
    `topologyManagerScope (--topology-manager-scope) ${JSON.stringify(kc.topologyManagerScope)} must be one of: "container", or "pod"`,
  );
  const swapBehavior = kc.memorySwap.swapBehavior ?? '';
  bad(
    !['', 'NoSwap', 'LimitedSwap'].includes(swapBehavior),
    `memorySwap.swapBehavior ${JSON.stringify(swapBehavior)} must be one of: "", "LimitedSwap" or "NoSwap"`,
  );
  const enforce = kc.enforceNodeAllocatable;
  for (const key of enforce) {
    if (key === 'none') {
      bad(
        enforce.length > 1,
        'enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified',
      );
      continue;
    }
    const [owner, flag] = key.startsWith('system-')
      ? ['systemReservedCgroup', 'system-reserved-cgroup']
      : ['kubeReservedCgroup', 'kube-reserved-cgroup'];
    if (key !== 'pods')
      bad(
        (owner === 'systemReservedCgroup' ? kc.systemReservedCgroup : kc.kubeReservedCgroup) === '',
        `${owner} (--${flag}) must be specified when "${key}" contained in enforceNodeAllocatable (--enforce-node-allocatable)`,
      );
  }
  for (const who of ['system', 'kube'])
    bad(
      enforce.includes(`${who}-reserved` as never) && enforce.includes(`${who}-reserved-compressible` as never),
      `enforceNodeAllocatable (--enforce-node-allocatable) may not contain both "${who}-reserved" and "${who}-reserved-compressible"`,
    );
  // NodeLogQuery is GA and on by default in v1.36: only turning it off refuses the query.
  bad(
    kc.enableSystemLogQuery && kc.featureGates?.NodeLogQuery === false,
    'NodeLogQuery feature gate is required for enableSystemLogHandler',
  );
  bad(
    kc.enableSystemLogQuery && !kc.enableSystemLogHandler,
    'enableSystemLogHandler is required for enableSystemLogQuery',
  );
  // Not a validation rule upstream but NewMainKubelet's refusal, in its words.
  if (!['Get', 'Cache', 'Watch'].includes(kc.configMapAndSecretChangeDetectionStrategy))
    errs.push(`unknown configmap and secret manager mode: ${kc.configMapAndSecretChangeDetectionStrategy}`);
  bad(kc.containerLogMaxWorkers < 1, 'containerLogMaxWorkers must be greater than or equal to 1');
  bad(
    (parseDuration(kc.containerLogMonitorInterval) ?? 0) < 3000,
    'containerLogMonitorInterval must be a positive time duration greater than or equal to 3s',
  );
  const maxRestart = kc.crashLoopBackOff.maxContainerRestartPeriod;
  if (maxRestart !== undefined) {
    const ms = parseDuration(maxRestart)!;
    bad(
      kc.featureGates?.KubeletCrashLoopBackOffMax === false,
      'FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set',
    );
    bad(
      ms < 1000 || ms > 300_000,
      `CrashLoopBackOff.MaxContainerRestartPeriod (got: ${ms / 1000} seconds) must be set between 1s and 300s`,
    );
  }
  const idsPerPod = kc.userNamespaces.idsPerPod;
  if (idsPerPod !== undefined) {
    bad(idsPerPod < USER_NAMESPACE_UNIT, `userNamespaces.idsPerPod must not be less than ${USER_NAMESPACE_UNIT}`);
    bad(idsPerPod % USER_NAMESPACE_UNIT !== 0, `userNamespaces.idsPerPod must be a multiple of ${USER_NAMESPACE_UNIT}`);
    bad(idsPerPod > 0xffffffff, `userNamespaces.idsPerPod must not be more than ${0xffffffff}`);
  }
  errs.push(...reservedMemoryErrors(reservedMemoryOf(kc)));
  return errs;
}

/** `reservedMemory` with its quantities as text (the file may give a plain number of bytes). */
export const reservedMemoryOf = (kc: KubeletConfiguration): MemoryReservation[] =>
  kc.reservedMemory.map(({ numaNode, limits }) => ({
    numaNode,
    limits: Object.fromEntries(Object.entries(limits).map(([type, q]) => [type, String(q)])),
  }));

/** The length of a user namespace's ID range (upstream's userNsUnitLength). */
const USER_NAMESPACE_UNIT = 65536;

/**
 * The rules that depend on the host (upstream's validateKubeletOSConfiguration on Linux), in its
 * words. Pure: the caller says which cgroup version the host mounts.
 */
export function hostConfigErrors(kc: KubeletConfiguration, host: { cgroupVersion: 1 | 2 }): string[] {
  if (host.cgroupVersion === 2) return [];
  if (kc.failCgroupV1)
    return [
      'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release',
    ];
  if (kc.singleProcessOOMKill === false)
    return ['invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1'];
  return [];
}
