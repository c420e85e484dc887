/**
 * The kubelet's view of one pod in the runtime (upstream kubecontainer.PodStatus): its sandboxes
 * and container instances, newest first, decoded from CRI plus the kubelet's labels.
 */

/** A container instance as the runtime reports it. Times are ms since the epoch (0 = unset). */
export interface RuntimeContainer {
  id: string;
  name: string;
  state: 'created' | 'running' | 'exited' | 'unknown';
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  image: string;
  imageRef: string;
  hash: string;
  restartCount: number;
  logPath: string;
  sandboxId: string;
  /** The user the runtime says the process runs as (CRI ContainerStatus.user), when it says. */
  user?: { uid: number; gid: number; supplementalGroups: number[] };
  /** The signal the runtime stops it with, in the API's spelling ("SIGRTMIN+1"), when the runtime says. */
  stopSignal?: string;
}

/** A pod sandbox as the runtime reports it. */
export interface RuntimeSandbox {
  id: string;
  ready: boolean;
  createdAt: number;
  attempt: number;
  ip: string;
  /** The runtime's other IPs of the pod (CRI additional_ips: the other family of a dual-stack pod). */
  additionalIps?: string[];
}

/** Everything the runtime knows about one pod. */
export interface PodRuntimeStatus {
  uid: string;
  name: string;
  namespace: string;
  /** Newest first. */
  sandboxes: RuntimeSandbox[];
  /** Newest first (by creation time). */
  containers: RuntimeContainer[];
}

/** The newest instance of container `name`, if any. */
export function latestContainer(s: PodRuntimeStatus, name: string): RuntimeContainer | undefined {
  return s.containers.find((c) => c.name === name);
}

/** All instances of container `name`, newest first. */
export function containerInstances(s: PodRuntimeStatus, name: string): RuntimeContainer[] {
  return s.containers.filter((c) => c.name === name);
}

/**
 * Whether a regular container (one of `containerNames`) was created, ran or exited: the pod's init containers are
 * behind it (upstream HasAnyRegularContainerCreated, which looks at every sandbox's newest instances).
 */
export function anyRegularContainerCreated(s: PodRuntimeStatus, containerNames: readonly string[]): boolean {
  return containerNames.some((name) => {
    const state = latestContainer(s, name)?.state;
    return state === 'created' || state === 'running' || state === 'exited';
  });
}

/**
 * Whether a regular container of the pod's newest sandbox has started (upstream HasAnyActiveRegularContainerStarted):
 * after a node reboot the old sandbox's exited containers do not make the new sandbox initialized.
 */
export function anyActiveRegularContainerStarted(s: PodRuntimeStatus, containerNames: readonly string[]): boolean {
  const sandboxId = s.sandboxes[0]?.id;
  if (!sandboxId) return false;
  const names = new Set(containerNames);
  return s.containers.some((c) => c.sandboxId === sandboxId && c.state !== 'created' && names.has(c.name));
}

/** An empty status for a pod the runtime does not know. */
export function emptyRuntimeStatus(uid: string, name: string, namespace: string): PodRuntimeStatus {
  return { uid, name, namespace, sandboxes: [], containers: [] };
}
