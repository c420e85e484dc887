/**
 * The subset of Kubernetes core/v1 types the kubelet reads and writes, with the API's JSON names.
 * Unknown fields are preserved by the decoders (pods round-trip through /pods unchanged).
 */

/** metav1.ObjectMeta. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: unknown[];
  [extra: string]: unknown;
}

/** core/v1 EnvVar. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}

/** core/v1 ContainerPort. */
export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: string;
}

/** core/v1 ResourceRequirements. */
export interface ResourceRequirements {
  limits?: Record<string, string>;
  requests?: Record<string, string>;
  /** The ResourceClaims (DRA) a container uses, by the pod's claim names. */
  claims?: { name: string; request?: string }[];
}

/** core/v1 Container (fields the kubelet uses; the rest pass through). */
export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  ports?: ContainerPort[];
  resources?: ResourceRequirements;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  /**
   * Always on an init container makes it a sidecar; on any other container it overrides the pod's
   * policy (ContainerRestartRules), with restartPolicyRules deciding by exit code first.
   */
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  restartPolicyRules?: ContainerRestartRule[];
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  livenessProbe?: unknown;
  readinessProbe?: unknown;
  startupProbe?: unknown;
  lifecycle?: unknown;
  securityContext?: Record<string, unknown>;
  /** Volumes given to the container as raw block devices at `devicePath`. */
  volumeDevices?: { name: string; devicePath: string }[];
  [extra: string]: unknown;
}

/** core/v1 EphemeralContainer (`kubectl debug`): a Container plus the target whose namespaces it joins. */
export interface EphemeralContainer extends Container {
  targetContainerName?: string;
}

/** core/v1 PodSpec. */
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: EphemeralContainer[];
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  dnsPolicy?: string;
  nodeName?: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  /** false: a user namespace of the pod's own (UserNamespacesSupport). */
  hostUsers?: boolean;
  hostname?: string;
  subdomain?: string;
  dnsConfig?: { nameservers?: string[]; searches?: string[]; options?: { name: string; value?: string }[] };
  hostAliases?: { ip: string; hostnames?: string[] }[];
  schedulerName?: string;
  securityContext?: Record<string, unknown>;
  enableServiceLinks?: boolean;
  priority?: number;
  /** Pod-level requests and limits (PodLevelResources): they bound the whole pod whatever its containers declare. */
  resources?: ResourceRequirements;
  tolerations?: unknown[];
  volumes?: unknown[];
  [extra: string]: unknown;
}

/** core/v1 ContainerRestartRule: the action when the exit code is (`In`) or is not (`NotIn`) one of the values. */
export interface ContainerRestartRule {
  action: string;
  exitCodes?: { operator: 'In' | 'NotIn'; values?: number[] };
}

/** core/v1 PodCondition. */
export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

/** core/v1 ContainerState: exactly one member is set. */
export interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason?: string;
    message?: string;
    startedAt?: string;
    finishedAt?: string;
    containerID?: string;
  };
}

/** core/v1 ContainerStatus. */
export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  restartCount: number;
  /** The health of the devices allocated to the container, by resource (ResourceHealthStatus). */
  allocatedResourcesStatus?: { name: string; resources: { resourceID: string; health: string; message?: string }[] }[];
  /** The requests allocated to the container (in-place resize: what the node admitted). */
  allocatedResources?: Record<string, string>;
  /** The requests and limits applied to the running container. */
  resources?: ResourceRequirements;
  /** The identity the container runs as, where the runtime reports it (SupplementalGroupsPolicy). */
  user?: { linux: { uid: number; gid: number; supplementalGroups: number[] } };
  /** The signal the runtime stops the container with (ContainerStopSignals). */
  stopSignal?: string;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
  /** The container's volume mounts as run (upstream RecursiveReadOnlyMounts, on in 1.32). */
  volumeMounts?: VolumeMountStatus[];
}

/** core/v1 VolumeMountStatus. */
export interface VolumeMountStatus {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  recursiveReadOnly?: 'Disabled' | 'Enabled';
}

/** The pod phase. */
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

/** core/v1 PodStatus. */
export interface PodStatus {
  /** The metadata.generation this status was computed for (PodObservedGenerationTracking, GA in v1.35). */
  observedGeneration?: number;
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  qosClass?: string;
  /** Pod-level resources as applied to the pod cgroup (InPlacePodLevelResourcesVerticalScaling). */
  resources?: ResourceRequirements;
  /** Pod-level requests as allocated (InPlacePodLevelResourcesVerticalScaling). */
  allocatedResources?: Record<string, string>;
}

/** core/v1 Pod. */
export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

/** core/v1 PodList. */
export interface PodList {
  kind: 'PodList';
  apiVersion: 'v1';
  metadata: { resourceVersion?: string };
  items: Pod[];
}

/** metav1.Status, the body of every API error. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: unknown;
  code?: number;
}

/** True for a phase a pod never leaves: Succeeded or Failed. */
export function isTerminalPhase(phase: string | undefined): phase is 'Succeeded' | 'Failed' {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** "namespace/name" → the pod's full name as the kubelet uses it ("name_namespace"). */
export function podFullName(pod: Pod): string {
  return `${pod.metadata.name}_${pod.metadata.namespace}`;
}
