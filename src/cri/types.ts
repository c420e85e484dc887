/**
 * TypeScript shapes of the CRI v1 messages (proto/runtime/v1/api.proto) as @grpc/proto-loader
 * presents them with `keepCase, enums: String, longs: Number`. Request fields are optional (a
 * server fills proto3 defaults); int64 fields are numbers (nanosecond timestamps lose < 256 ns).
 */
import type { ContainerMetadata, ImageSpec, Int64Value, Labels, PodSandboxMetadata } from './types-common.js';

export type * from './types-common.js';
export type * from './stats-types.js';
export type * from './image-types.js';

export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
export type Protocol = 'TCP' | 'UDP' | 'SCTP';

export interface VersionResponse {
  version: string;
  runtime_name: string;
  runtime_version: string;
  runtime_api_version: string;
}

export interface DNSConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}
export interface PortMapping {
  protocol?: Protocol;
  container_port?: number;
  host_port?: number;
  host_ip?: string;
}
export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  target_id?: string;
  /** The user namespace (NODE: the host's; POD: one with the given ID mappings). */
  userns_options?: UserNamespace | null;
}

/** A range of IDs mapped into a user namespace. */
export interface IDMapping {
  host_id: number;
  container_id: number;
  length: number;
}

/** A pod's user namespace, as CRI describes it. */
export interface UserNamespace {
  mode: NamespaceMode;
  uids?: IDMapping[];
  gids?: IDMapping[];
}

/** An SELinux label (user:role:type:level); an empty part is the runtime's default. */
export interface SELinuxOption {
  user: string;
  role: string;
  type: string;
  level: string;
}

export interface LinuxSandboxSecurityContext {
  namespace_options?: NamespaceOption;
  selinux_options?: SELinuxOption | null;
  run_as_user?: Int64Value | null;
  run_as_group?: Int64Value | null;
  readonly_rootfs?: boolean;
  supplemental_groups?: number[];
  /** Merge: the groups of the image's /etc/group too; Strict: only those given. */
  supplemental_groups_policy?: 'Merge' | 'Strict';
  privileged?: boolean;
  seccomp?: SecurityProfile | null;
  apparmor?: SecurityProfile | null;
}

/** UpdatePodSandboxResourcesRequest: the pod's resources after the kubelet resized its cgroup. */
export interface UpdatePodSandboxResourcesRequest {
  pod_sandbox_id: string;
  overhead?: LinuxContainerResources | null;
  resources?: LinuxContainerResources | null;
}

export interface CheckpointContainerRequest {
  container_id: string;
  /** Where the runtime writes the checkpoint archive. */
  location: string;
  /** Seconds; 0: the runtime request timeout. */
  timeout?: number;
}

/** RuntimeConfig (UpdateRuntimeConfig's): the node's pod CIDRs, comma-separated, as the kubelet tells the runtime. */
export interface RuntimeConfig {
  network_config?: { pod_cidr?: string } | null;
}

/** RuntimeConfigResponse: the runtime's own settings the kubelet adopts (its cgroup driver). */
export interface RuntimeConfigResponse {
  linux?: { cgroup_driver?: 'SYSTEMD' | 'CGROUPFS' } | null;
}

export interface SecurityProfile {
  profile_type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhost_ref?: string;
}

export interface LinuxContainerResources {
  cpu_period?: number;
  cpu_quota?: number;
  cpu_shares?: number;
  memory_limit_in_bytes?: number;
  oom_score_adj?: number;
  cpuset_cpus?: string;
  cpuset_mems?: string;
  unified?: Labels;
  memory_swap_limit_in_bytes?: number;
  /** Per huge page size (`2MB`, `1GB`), the bytes of it the container may use. */
  hugepage_limits?: { page_size: string; limit: number }[];
}

export interface LinuxPodSandboxConfig {
  cgroup_parent?: string;
  security_context?: LinuxSandboxSecurityContext;
  sysctls?: Labels;
  overhead?: LinuxContainerResources | null;
  resources?: LinuxContainerResources | null;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  log_directory?: string;
  dns_config?: DNSConfig | null;
  port_mappings?: PortMapping[];
  labels?: Labels;
  annotations?: Labels;
  linux?: LinuxPodSandboxConfig | null;
}

export interface PodSandboxNetworkStatus {
  ip: string;
  additional_ips?: { ip: string }[];
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  created_at: number;
  network?: PodSandboxNetworkStatus | null;
  linux?: { namespaces?: { options?: NamespaceOption | null } | null } | null;
  labels: Labels;
  annotations: Labels;
  runtime_handler?: string;
}

export interface PodSandboxStatusResponse {
  status: PodSandboxStatus;
  info?: Labels;
  containers_statuses?: ContainerStatus[];
  timestamp?: number;
}

export interface PodSandboxFilter {
  id?: string;
  state?: { state: PodSandboxState } | null;
  label_selector?: Labels;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  created_at: number;
  labels: Labels;
  annotations: Labels;
  runtime_handler?: string;
}

export interface KeyValue {
  key: string;
  /** Text, or bytes that are not UTF-8 (a binary Secret value): `bytes` on the wire, as cri-api v1.36.2 has it. */
  value: string | Uint8Array;
}
export interface Mount {
  container_path: string;
  host_path: string;
  readonly?: boolean;
  selinux_relabel?: boolean;
  propagation?: string;
  recursive_read_only?: boolean;
  /** An image volume: the runtime mounts this image's content (read-only), `host_path` is empty. */
  image?: ImageSpec | null;
  /** The directory of the image to mount instead of its root (a volumeMount's subPath). */
  image_sub_path?: string;
}

/** A host device node passed into a container (a raw block volume). */
export interface Device {
  container_path: string;
  host_path: string;
  /** cgroup device permissions: "mrw", or "r" for a read-only volume. */
  permissions: string;
}

export interface Capability {
  add_capabilities?: string[];
  drop_capabilities?: string[];
}

export interface LinuxContainerSecurityContext {
  capabilities?: Capability | null;
  privileged?: boolean;
  namespace_options?: NamespaceOption | null;
  selinux_options?: SELinuxOption | null;
  run_as_user?: Int64Value | null;
  run_as_group?: Int64Value | null;
  run_as_username?: string;
  readonly_rootfs?: boolean;
  supplemental_groups?: number[];
  supplemental_groups_policy?: 'Merge' | 'Strict';
  no_new_privs?: boolean;
  masked_paths?: string[];
  readonly_paths?: string[];
  seccomp?: SecurityProfile | null;
  apparmor?: SecurityProfile | null;
  /**
   * The deprecated apparmor profile name ("runtime/default", "localhost/<name>", "unconfined"), still read by older
   * runtimes.
   */
  apparmor_profile?: string;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  working_dir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  devices?: Device[];
  /** CDI devices (fully qualified names) the runtime resolves itself. */
  CDI_devices?: { name: string }[];
  labels?: Labels;
  annotations?: Labels;
  log_path?: string;
  stdin?: boolean;
  stdin_once?: boolean;
  tty?: boolean;
  linux?: {
    resources?: LinuxContainerResources | null;
    security_context?: LinuxContainerSecurityContext | null;
  } | null;
  /**
   * The signal StopContainer sends first (runtime.v1 Signal: "SIGUSR1", "SIGRTMINPLUS1", …; RUNTIME_DEFAULT: the
   * image's, else SIGTERM).
   */
  stop_signal?: string;
}

export interface ContainerFilter {
  id?: string;
  state?: { state: ContainerState } | null;
  pod_sandbox_id?: string;
  label_selector?: Labels;
}

export interface Container {
  id: string;
  pod_sandbox_id: string;
  metadata: ContainerMetadata;
  image: ImageSpec;
  image_ref: string;
  state: ContainerState;
  created_at: number;
  labels: Labels;
  annotations: Labels;
  image_id?: string;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: ContainerState;
  created_at: number;
  started_at: number;
  finished_at: number;
  exit_code: number;
  image: ImageSpec;
  image_ref: string;
  reason: string;
  message: string;
  labels: Labels;
  annotations: Labels;
  mounts?: Mount[];
  log_path: string;
  image_id?: string;
  /** The identity the container's first process runs as, where the runtime reports it. */
  user?: { linux?: { uid: number; gid: number; supplemental_groups?: number[] } | null } | null;
  /** The signal the runtime stops the container with (runtime.v1 Signal), where it says (RUNTIME_DEFAULT otherwise). */
  stop_signal?: string;
}

export interface ContainerStatusResponse {
  status: ContainerStatus;
  info?: Labels;
}

export interface ExecSyncResponse {
  stdout: Buffer;
  stderr: Buffer;
  exit_code: number;
}

export interface ExecRequest {
  container_id: string;
  cmd: string[];
  tty?: boolean;
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
}
export interface AttachRequest {
  container_id: string;
  stdin?: boolean;
  tty?: boolean;
  stdout?: boolean;
  stderr?: boolean;
}
export interface PortForwardRequest {
  pod_sandbox_id: string;
  port?: number[];
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason?: string;
  message?: string;
}
export interface StatusResponse {
  status: { conditions: RuntimeCondition[] };
  info?: Labels;
  /** The runtime's handlers and what each supports (containerd 2 and later; absent before). */
  runtime_handlers?: {
    name: string;
    features?: { recursive_read_only_mounts?: boolean; user_namespaces?: boolean } | null;
  }[];
  /** What the runtime supports beyond its handlers (containerd 2 and later; absent before). */
  features?: { supplemental_groups_policy?: boolean } | null;
}
