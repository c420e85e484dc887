/**
 * Wiring of the container runtime: the embedded process runtime (in-process) when no endpoint is
 * configured, else a CRI gRPC client for the endpoint (containerd, or `tskubelet process-runtime`);
 * either way instrumented for kubelet_runtime_operations_*. Also the images image GC must keep:
 * the runtime's own sandbox image (v1.36 has no --pod-infra-container-image). At start, the runtime's name and
 * version. And the node facts the pod action executor works with (nodeFacts).
 */
import { PullRecords } from './images/pull-records.js';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../lib/logger.js';
import type { Pod } from '../api/types.js';
import { createCriClient } from '../cri/client.js';
import { CRI_API_VERSION, type CriRuntime } from '../cri/services.js';
import { messageOf, unavailable } from '../lib/errors.js';
import type { ProcessRuntime } from '../process-runtime/runtime.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import { instrumentCri } from './metrics/instrument.js';
import { gateLifecycleCalls } from './runtime/lifecycle-gate.js';
import type { AgentConfig } from './agent-config.js';
import type { NodeFacts } from './runtime/executor.js';
import type { ImageService } from '../cri/services.js';
import type { Clock } from '../lib/clock.js';
import { TokenBucket } from '../lib/token-bucket.js';
import { ImageManager, type ImageManagerDeps } from './images/image-manager.js';
import { nodeRef, type EventSink } from './events/recorder.js';
import { PodCgroupManager, type CgroupOpObserver, type NodeAllocatable } from './cgroups/pod-cgroup-manager.js';
import { hugePageBytesLeft, nodeAllocatableAbsolute, reservedCgroupLimits } from './cgroups/pod-resource-config.js';
import { CredentialProviders } from './images/credential-provider.js';
import { serviceAccountSource } from './images/service-account-source.js';
import type { CredentialProviderMetrics } from './metrics/credential-provider-metrics.js';
import type { AuthConfig } from './images/keyring.js';
import {
  cgroupDriverFromRuntime,
  CRI_LOSING_SUPPORT_VERSION,
  type CgroupDriver,
  type RuntimeCgroupDriver,
} from './cgroups/cgroup-driver.js';
import { systemdUnits } from './cgroups/systemd-units.js';
import type { PodCgroupNaming } from './gc/pod-cgroups.js';
import { RuntimeClassHandlers, handlerSupportsRecursiveReadOnly } from './objects/runtime-class.js';
import type { PodObjectFetcher } from './objects/pod-objects.js';
import type { RuntimeState } from './runtime/runtime-state.js';
import { hugePageSizesKbSync, type HugePagePool } from './nodestatus/machine-info.js';
import { nodeSwapContext } from './runtime/swap.js';
import type { KubeClient } from '../lib/kube-client.js';
import { userNamespaceRefusal } from './runtime/user-namespaces.js';
import { USER_NAMESPACE_UNIT, UserNamespaceManager } from './userns/user-namespace-manager.js';
import { kubeletMapping } from './userns/kubelet-mappings.js';
import { hostCgroupVersion } from './node-setup/cgroup-version.js';

/** The runtime the agent talks to, and the embedded one when it is in-process. */
export interface ComposedRuntime {
  runtime: CriRuntime;
  processRuntime?: ProcessRuntime;
}

/** The embedded process runtime, in-process. */
export interface EmbeddedRuntime {
  processRuntime: ProcessRuntime;
  runtime: CriRuntime;
}

/**
 * Loads and builds the embedded runtime. Its code (and the streaming servers and `ws` it brings)
 * is only loaded when no endpoint is configured: a kubelet on containerd never holds it.
 */
export async function loadEmbeddedRuntime(
  cfg: { rootDir: string; nodeIP: string; version: string; streamingIdleTimeoutMs?: number },
  logger: Logger,
): Promise<EmbeddedRuntime> {
  const [{ ProcessRuntime }, { ProcessImages }] = await Promise.all([
    import('../process-runtime/runtime.js'),
    import('../process-runtime/images.js'),
  ]);
  const processRuntime = new ProcessRuntime({
    stateDir: join(cfg.rootDir, 'process-runtime'),
    podIP: cfg.nodeIP,
    mode: 'in-process',
    kubeletRootDir: cfg.rootDir,
    logger,
    version: cfg.version,
    streamingIdleTimeoutMs: cfg.streamingIdleTimeoutMs,
    // The embedded runtime's own setting, as containerd's cdi_spec_dirs: where CDI specs are (colon-separated).
    cdiSpecDirs: process.env.TSKUBELET_CDI_SPEC_DIRS?.split(':').filter(Boolean),
  });
  return { processRuntime, runtime: { runtime: processRuntime, images: new ProcessImages(cfg.rootDir) } };
}

/**
 * The CRI clients: the ImageService from `imageEndpoint` when it names another endpoint (upstream
 * imageServiceEndpoint).
 */
function criClients(
  endpoint: string,
  imageEndpoint: string | undefined,
  requestTimeoutMs: number | undefined,
): CriRuntime {
  const rt = createCriClient(endpoint, { requestTimeoutMs });
  if (!imageEndpoint || imageEndpoint === endpoint) return rt;
  const img = createCriClient(imageEndpoint, { requestTimeoutMs });
  return {
    runtime: rt.runtime,
    images: img.images,
    close: () => {
      rt.close?.();
      img.close?.();
    },
  };
}

/**
 * Picks and instruments the runtime: `given` (tests pass their own), else the endpoint's CRI client, else the embedded
 * one; `logger`: the CRI call log's.
 */
export function composeRuntime(
  cfg: { containerRuntimeEndpoint: string; imageServiceEndpoint?: string; runtimeRequestTimeoutMs?: number },
  o: { metrics: KubeletMetrics; given?: CriRuntime; embedded?: EmbeddedRuntime; logger?: Logger },
): ComposedRuntime {
  let processRuntime: ProcessRuntime | undefined;
  let runtime: CriRuntime;
  if (o.given) runtime = o.given;
  else if (cfg.containerRuntimeEndpoint)
    runtime = criClients(cfg.containerRuntimeEndpoint, cfg.imageServiceEndpoint, cfg.runtimeRequestTimeoutMs);
  else if (o.embedded) ({ processRuntime, runtime } = o.embedded);
  else
    throw new Error(
      'no container runtime endpoint is configured and the embedded runtime was not loaded (loadEmbeddedRuntime)',
    );
  // Its V(10) call log under upstream's source name (remote_runtime.go).
  // Gated outside the instrumentation: a call's duration and its log line start when it is sent.
  return {
    runtime: gateLifecycleCalls(instrumentCri(runtime, o.metrics, o.logger?.child({ component: 'remote_runtime' }))),
    processRuntime,
  };
}

/**
 * The image manager with the configuration's pull limits. The registry pull rate applies to a
 * runtime that pulls from registries (`registry`), not to the embedded one, whose pulls are no-ops.
 */
export function composeImages(
  cfg: AgentConfig,
  d: {
    images: ImageService;
    clock: Clock;
    events: EventSink;
    registry: boolean;
    pullTimes?: ImageManagerDeps['pullTimes'];
    requests?: ImageManagerDeps['requests'];
  },
): ImageManager {
  return new ImageManager({
    images: d.images,
    clock: d.clock,
    serializeImagePulls: cfg.serializeImagePulls,
    maxParallelImagePulls: cfg.maxParallelImagePulls,
    pullLimiter:
      d.registry && cfg.registryPullQPS
        ? new TokenBucket(cfg.registryPullQPS, cfg.registryBurst ?? 0, () => d.clock.monotonic())
        : undefined,
    events: d.events,
    pullTimes: d.pullTimes,
    requests: d.requests,
    // Images a registry serves are pulled with credentials; the embedded runtime's are the host's programs.
    ...(d.registry && cfg.imagePullCredentials
      ? {
          pullRecords: {
            records: new PullRecords(cfg.rootDir),
            policy: cfg.imagePullCredentials.policy,
            allowlist: cfg.imagePullCredentials.allowlist,
          },
        }
      : {}),
  });
}

/**
 * What the executor gets of the node besides the runtime: the pod cgroup manager, for a CRI
 * runtime the kubelet connects to (not the embedded one, which keeps its containers in its own
 * subtree) with cgroupsPerQOS and the cgroupfs driver, as root; the image credential providers.
 */
export function composeNodeResources(
  cfg: AgentConfig,
  d: {
    criEndpoint: boolean;
    /** The machine's huge page sizes (kB), whose hugetlb limits the pod and QoS cgroups get. */
    hugePageSizesKb: readonly number[];
    logger: Logger;
    activePods: () => Pod[];
    /** Whether a pod holds exclusive CPUs (its cgroup then has no CFS quota); absent: none does. */
    exclusiveCpus?: (podUid: string) => boolean;
    observeCgroup?: CgroupOpObserver;
    /** The apiserver: service accounts and their tokens for providers with tokenAttributes. */
    api?: KubeClient;
    clock: Clock;
    /** The plugins' metrics. */
    credentialProviderMetrics?: CredentialProviderMetrics;
  },
): {
  podCgroups?: PodCgroupManager;
  /** How pod cgroups are named and removed (the garbage collector's and the pod sync's). */
  cgroupNaming: PodCgroupNaming;
  loadCredentialProviders(): Promise<void>;
  nodeCredentials?: (image: string, pod?: Pod) => Promise<AuthConfig[]>;
} {
  const c = cfg.cgroups;
  // With the systemd driver, systemd owns the cgroups: the kubelet's are slices it starts and stops.
  const systemd = c.cgroupDriver === 'systemd' ? systemdUnits() : undefined;
  const podCgroups =
    d.criEndpoint && c.cgroupsPerQOS && process.getuid?.() === 0
      ? new PodCgroupManager({
          cgroups: c,
          cpuCFSQuota: cfg.cpuCFSQuota,
          cpuCFSQuotaPeriodUs: cfg.cpuCFSQuotaPeriodUs,
          exclusiveCpus: d.exclusiveCpus,
          podPidsLimit: cfg.podPidsLimit ?? -1,
          activePods: d.activePods,
          observe: d.observeCgroup,
          systemd,
          hugePageSizesKb: d.hugePageSizesKb,
        })
      : undefined;
  // Checked when the agent starts (loadCredentialProviders); a start that fails ends the kubelet.
  const cp = cfg.imageCredentialProvider;
  let providers: CredentialProviders | undefined;
  const loadCredentialProviders = async () => {
    if (cp)
      providers = await CredentialProviders.fromFiles(cp.configPath, cp.binDir, {
        logger: d.logger,
        serviceAccounts: d.api && serviceAccountSource(d.api, d.clock),
        metrics: d.credentialProviderMetrics,
      });
  };
  return {
    podCgroups,
    cgroupNaming: { cgroupRoot: c.cgroupRoot, cgroupDriver: c.cgroupDriver, systemd },
    loadCredentialProviders,
    nodeCredentials:
      cp &&
      (async (image, pod) =>
        providers
          ? providers.credentialsFor(
              image,
              pod && {
                namespace: pod.metadata.namespace ?? '',
                name: pod.metadata.name ?? '',
                uid: pod.metadata.uid ?? '',
                serviceAccountName: pod.spec.serviceAccountName as string | undefined,
              },
            )
          : []),
  };
}

/**
 * The node's cgroups at start, then their upkeep every minute: the kubelet kept in its own cgroup
 * when kubeletCgroups names one (node-setup/kubelet-cgroup.ts; prepareHost moved it there), and the QoS cgroups
 * (kubepods capped at
 * the node's allocatable) and the system-/kube-reserved cgroups (enforceNodeAllocatable) when the kubelet makes pod
 * cgroups.
 */
export async function startNodeCgroups(
  m: PodCgroupManager | undefined,
  cfg: AgentConfig,
  machine: { cpuCores: number; memoryBytes: number; hugePages?: readonly HugePagePool[] },
  o: { signal: AbortSignal; clock: Clock; logger: Logger; events: EventSink },
): Promise<void> {
  const kubeletCgroup = cfg.systemCgroupNames?.kubelet;
  if (kubeletCgroup) (await import('./node-setup/kubelet-cgroup.js')).startKubeletCgroup(kubeletCgroup, o);
  if (!m) return;
  const node = nodeRef(cfg.nodeName);
  // Upstream's event reasons: SuccessfulNodeAllocatableEnforcement is "NodeAllocatableEnforced".
  await m.ensureQosCgroups(nodeAllocatableFor(cfg, machine)).then(
    () => {
      if ((cfg.enforceNodeAllocatable ?? ['pods']).includes('pods'))
        o.events.record(node, 'Normal', 'NodeAllocatableEnforced', 'Updated Node Allocatable limit across pods');
    },
    (err: unknown) => o.logger.warn({ err: messageOf(err) }, 'failed to set up the QoS cgroups'),
  );
  // system-reserved / kube-reserved: their existing cgroups capped at the reserved amounts; a failure stops the start,
  // as upstream's.
  const reserved = reservedCgroupLimits(cfg.enforceNodeAllocatable ?? [], {
    cgroups: cfg.reservedCgroups ?? { system: '', kube: '' },
    systemReserved: cfg.node.systemReserved,
    kubeReserved: cfg.node.kubeReserved,
  });
  for (const r of reserved) {
    const Who = r.who === 'system' ? 'System' : 'Kube';
    try {
      await m.enforceExisting(r.cgroup, r.config);
    } catch (err) {
      const message = `Failed to enforce ${Who} Reserved Cgroup Limits on "${r.cgroup}": ${messageOf(err)}`;
      o.events.record(node, 'Warning', 'FailedNodeAllocatableEnforcement', message);
      throw new Error(message, { cause: err });
    }
    o.events.record(
      node,
      'Normal',
      'NodeAllocatableEnforced',
      `Updated limits on ${r.who} reserved cgroup ${r.cgroup}`,
    );
  }
  m.start({ signal: o.signal, clock: o.clock, logger: o.logger });
}

/**
 * What the kubepods cgroup is capped at: the allocatable with enforceNodeAllocatable "pods" (the default), else the
 * capacity (upstream enforceNodeAllocatableCgroups); each huge page pool is its pages' bytes, less what is reserved of
 * it when allocatable is enforced.
 */
export function nodeAllocatableFor(
  cfg: Pick<AgentConfig, 'enforceNodeAllocatable'> & {
    node: Pick<AgentConfig['node'], 'kubeReserved' | 'systemReserved'>;
  },
  machine: { cpuCores: number; memoryBytes: number; hugePages?: readonly HugePagePool[] },
): NodeAllocatable {
  const capacity = { cpuMilli: machine.cpuCores * 1000, memoryBytes: machine.memoryBytes };
  const enforce = (cfg.enforceNodeAllocatable ?? ['pods']).includes('pods');
  const reserved = [cfg.node.kubeReserved, cfg.node.systemReserved];
  const hugePageBytes = hugePageBytesLeft(machine.hugePages ?? [], enforce ? reserved : []);
  return { ...(enforce ? nodeAllocatableAbsolute(capacity, reserved) : capacity), hugePageBytes };
}

/** The sandbox image a CRI runtime reports in its verbose Status info (containerd: config.sandboxImage). */
export function sandboxImageFromInfo(info: Record<string, string> | undefined): string | undefined {
  try {
    return (JSON.parse(info?.config ?? '{}') as { sandboxImage?: string }).sandboxImage || undefined;
  } catch {
    return undefined;
  }
}

/**
 * KubeletCgroupDriverFromCRI (upstream: GA and locked on): the runtime's cgroup driver
 * (cgroups/cgroup-driver.ts) replaces the configuration's, in the agent's config and in `kc`
 * (/configz), asked before the agent is composed as upstream asks before it builds its container
 * manager: the embedded runtime, or the endpoint over a connection of its own, closed once
 * answered. Throws when the runtime cannot say (the kubelet does not start).
 */
export async function adoptRuntimeCgroupDriver(
  kc: { cgroupDriver: CgroupDriver },
  cfg: AgentConfig,
  embedded: EmbeddedRuntime | undefined,
  logger: Logger,
): Promise<void> {
  let answer: RuntimeCgroupDriver;
  if (embedded) answer = await cgroupDriverFromRuntime(embedded.runtime.runtime, { logger });
  else {
    const client = createCriClient(cfg.containerRuntimeEndpoint, { requestTimeoutMs: cfg.runtimeRequestTimeoutMs });
    try {
      answer = await cgroupDriverFromRuntime(client.runtime, { logger });
    } finally {
      client.close?.();
    }
  }
  if (answer.driver) kc.cgroupDriver = cfg.cgroups.cgroupDriver = answer.driver;
  if (answer.fellBack) cfg.criLosingSupport = CRI_LOSING_SUPPORT_VERSION;
}

/**
 * The pods' runtime handlers (their RuntimeClasses, through the object cache; none without an
 * apiserver), and whether a pod's handler makes recursive read-only mounts and can give it the user
 * namespace `hostUsers` asks for, by the runtime's last Status list.
 */
export function composeRuntimeClasses(
  objects: PodObjectFetcher | undefined,
  runtimeState: RuntimeState,
  userNamespacesGate: boolean,
): {
  runtimeHandler?: (pod: Pod) => Promise<string>;
  supportsRecursiveReadOnly: (pod: Pod) => boolean;
  userNamespaceRefusal: (pod: Pod, handler: string) => string | undefined;
} {
  const classes = new RuntimeClassHandlers(objects && ((path) => objects.get(path)));
  return {
    runtimeHandler: objects && ((pod) => classes.handlerOf(pod)),
    supportsRecursiveReadOnly: (pod) =>
      handlerSupportsRecursiveReadOnly(runtimeState.runtimeHandlers(), classes.knownHandlerOf(pod)),
    userNamespaceRefusal: (pod, handler) =>
      userNamespaceRefusal(pod, handler, { gateEnabled: userNamespacesGate, handlers: runtimeState.runtimeHandlers() }),
  };
}

/**
 * The user namespace manager (upstream MakeUserNsManager) with the UserNamespacesSupport gate on:
 * the kubelet's ID range, the ranges of the pods on disk recorded; throws upstream's message when
 * the range does not fit or a pod's file cannot be read. Undefined with the gate off.
 */
export function composeUserNamespaces(cfg: AgentConfig, logger: Logger): UserNamespaceManager | undefined {
  if (!cfg.userNamespacesSupport) return undefined;
  try {
    const idsPerPod = cfg.userNamespaceIdsPerPod ?? USER_NAMESPACE_UNIT;
    const manager = new UserNamespaceManager({
      podsDir: join(cfg.rootDir, 'pods'),
      idsPerPod,
      kubeletRange: kubeletMapping(idsPerPod),
      maxPods: cfg.node.maxPods,
      logger,
    });
    manager.start();
    return manager;
  } catch (err) {
    throw new Error(`create user namespace manager: ${messageOf(err)}`, { cause: err });
  }
}

/** Images image GC never removes; asked of the runtime once (again after a failure). */
export function protectedImages(runtime: CriRuntime): () => Promise<string[]> {
  let cached: Promise<string[]> | undefined;
  return () =>
    (cached ??= runtime.runtime.status(true).then(
      (s) => [sandboxImageFromInfo(s.info)].filter((x): x is string => !!x),
      () => {
        cached = undefined;
        return [];
      },
    ));
}

/**
 * Asks the runtime its name and version (the node's containerRuntimeVersion); a runtime that does not answer stops the
 * start.
 */
export async function connectRuntime(
  runtime: CriRuntime,
  endpoint: string,
  logger: Logger,
): Promise<{ name: string; version: string }> {
  try {
    const v = await runtime.runtime.version(CRI_API_VERSION);
    logger.info(
      { runtime: v.runtime_name, version: v.runtime_version, apiVersion: v.runtime_api_version },
      'connected to container runtime',
    );
    return { name: v.runtime_name, version: `${v.runtime_name}://${v.runtime_version}` };
  } catch (err) {
    throw unavailable(`container runtime is not reachable at ${endpoint || '(embedded)'}: ${messageOf(err)}`, err);
  }
}

/**
 * What the pod action executor needs to know of the node, from the agent's configuration; `exclusiveCpus` is the CPU
 * manager's (whose exclusive CPUs come without a CFS quota).
 */
export function nodeFacts(
  cfg: AgentConfig,
  d: { exclusiveCpus?: (podUid: string, containerName?: string) => boolean } = {},
): NodeFacts {
  return {
    nodeName: cfg.nodeName,
    nodeIP: cfg.nodeIP,
    rootDir: cfg.rootDir,
    podLogsDir: cfg.podLogsDir,
    containerLogsDir: cfg.containerLogsDir,
    clusterDNS: cfg.clusterDNS,
    clusterDomain: cfg.clusterDomain,
    resolvConfPath: cfg.resolvConf,
    cgroups: cfg.cgroups,
    security: { seccompDefault: cfg.seccompDefault ?? false, seccompProfileRoot: join(cfg.rootDir, 'seccomp') },
    userNamespacesSupport: cfg.userNamespacesSupport,
    containerStopSignals: cfg.containerStopSignals,
    resources: {
      memoryCapacityBytes: totalmem(),
      cpuCFSQuota: cfg.cpuCFSQuota,
      cpuCFSQuotaPeriodUs: cfg.cpuCFSQuotaPeriodUs,
      hugePageSizesKb: hugePageSizesKbSync(),
      swap: nodeSwapContext(cfg.swapBehavior),
      exclusiveCpus: d.exclusiveCpus,
      oomKillGroup: cfg.singleProcessOOMKill !== true && hostCgroupVersion() === 2,
    },
  };
}
