/**
 * What the pod action executor (executor.ts) needs: the node's facts, the runtime and the managers it calls, its
 * counters.
 */
import type { ContainerDevices } from '../devices/device-manager.js';
import type { ContainerCpusets } from '../cpumanager/views.js';
import type { Container, Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { ImageManager } from '../images/image-manager.js';
import type { AuthConfig, PullSecret } from '../images/keyring.js';
import type { EventSink } from '../events/recorder.js';
import type { BackoffTable } from '../sync/backoff.js';
import type { PodObjects } from './env.js';
import type { CgroupContext, ResourceContext } from './linux-resources.js';
import type { SecurityProfileContext } from './security-profiles.js';
import type { HookCounters } from './lifecycle-hooks.js';

/** Node facts and files the executor reads (paths are read at each sandbox/container start, as upstream). */
export interface NodeFacts {
  nodeName: string;
  nodeIP: string;
  rootDir: string;
  podLogsDir: string;
  /** Where the legacy container log links go (/var/log/containers); absent: none are made. */
  containerLogsDir?: string;
  clusterDNS: string[];
  clusterDomain: string;
  /** --resolv-conf ("" → no host DNS). */
  resolvConfPath: string;
  cgroups: CgroupContext;
  resources: ResourceContext;
  /** seccompDefault and <root-dir>/seccomp. */
  security?: SecurityProfileContext;
  /** The UserNamespacesSupport gate (upstream names the node's user namespace in every pod's options with it). */
  userNamespacesSupport?: boolean;
  /** The ContainerStopSignals gate: a container's `lifecycle.stopSignal` goes to the runtime. */
  containerStopSignals?: boolean;
}

/**
 * Upstream's start counters (kubelet_started_pods_total / _errors_total, kubelet_started_containers_total /
 * _errors_total).
 */
export interface StartCounters {
  /** A sandbox asked for: made, or not; `userNamespaced` when the pod asked for its own user namespace. */
  pod(ok: boolean, userNamespaced: boolean): void;
  /**
   * A container start tried (past its back-off): `code` is the failure's reason (CreateContainerError, ErrImagePull,
   * …).
   */
  container(type: 'container' | 'init_container' | 'ephemeral_container', code?: string): void;
}

/**
 * When the pod's init containers (not sidecars) ran, for the pod startup SLI, which leaves that time out (upstream's
 * podInitContainerTimeRecorder): one started (its StartContainer answered), and one finished (its exit, as the runtime
 * dates it).
 */
export interface InitContainerTimes {
  started(podUid: string, atMs: number): void;
  finished(podUid: string, atMs: number): void;
}

/** What the executor needs. */
export interface ExecutorDeps {
  counters?: StartCounters;
  initContainerTimes?: InitContainerTimes;
  /** Upstream's hook counters (an HTTPS hook answered in HTTP, a sleep hook cut off). */
  hookCounters?: HookCounters;
  /**
   * Upstream's image volume counters (kubelet_image_volume_requested_total, _mounted_succeed_total / _errors_total).
   */
  imageVolumeCounters?: { requested(mounts: number): void; mounted(mounts: number, ok: boolean): void };
  runtime: RuntimeService;
  images: ImageManager;
  backoff: BackoffTable;
  clock: Clock;
  node: NodeFacts;
  /** The runtime's network error (NetworkReady=false), if any. */
  networkError(): string | undefined;
  /** The node's allocatable cpu/memory: resourceFieldRef limits of containers without limits. */
  nodeAllocatable?(): { cpuMilli: number; memoryBytes: number } | undefined;
  /** The API objects a pod refers to (absent without an apiserver). */
  objects?: { forPod(pod: Pod): Promise<PodObjects & { pullSecrets: PullSecret[] }> };
  events?: EventSink;
  logger?: Logger;
  /** The node's image credentials (credential provider plugins), tried after the pod's pull secrets. */
  nodeCredentials?(image: string, pod?: Pod): Promise<AuthConfig[]>;
  /** The CPU manager's cpuset for each container created (compose-resource-managers.ts; absent or undefined: none). */
  cpusets?: ContainerCpusets;
  /** The memory manager's NUMA nodes of a container's memory, as cpuset.mems (`0,1`; undefined: none). */
  cpusetMems?(podUid: string, name: string): string | undefined;
  /** The pod cgroups made before a sandbox (CRI runtimes with cgroupsPerQOS; agent/cgroups). */
  podCgroups?: { ensure(pod: Pod): Promise<void> };
  /** The device manager: what the plugins answered for a container's devices (none without devices). */
  devices?: { containerDevices(pod: Pod, c: Container): Promise<ContainerDevices[]> };
  /** The DRA manager: the CDI devices of the claims a container uses, and their annotations. */
  dra?: {
    cdiDevices(pod: Pod, c: Container): string[];
    cdiAnnotations(pod: Pod, c: Container): Record<string, string>;
  };
  /** The runtime handler of the pod's RuntimeClass (objects/runtime-class.ts; absent without an apiserver). */
  runtimeHandler?(pod: Pod): Promise<string>;
  /** Whether the pod's runtime handler makes recursive read-only mounts. */
  supportsRecursiveReadOnly?(pod: Pod): boolean;
  /** Why a pod's `hostUsers` rules out its sandbox on `handler` (user-namespaces.ts). */
  userNamespaceRefusal?(pod: Pod, handler: string): string | undefined;
  /**
   * A `hostUsers: false` pod's own user namespace (its ID range from the user namespace manager, made on first use);
   * throws when none can be had.
   */
  userNamespace?(pod: Pod): cri.UserNamespace;
}
