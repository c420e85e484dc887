/**
 * The CRI seams the agent consumes: RuntimeService and ImageService, method for method the gRPC
 * services of runtime.v1 with the request unwrapped into arguments. Implemented by the gRPC client
 * (containerd, the process-runtime daemon) and, in-process, by the process runtime itself.
 *
 * Contract (as CRI's): StopX and RemoveX calls are idempotent and succeed for unknown ids; Status, List*
 * and *Status never block on container work; StopContainer blocks up to `timeoutSeconds`;
 * errors are KubeletErrors (NotFound for unknown ids on *Status, Unavailable when the runtime
 * cannot be reached, NotImplemented for unsupported calls).
 */
import type * as cri from './types.js';

/** runtime.v1.RuntimeService. */
export interface RuntimeService {
  version(apiVersion: string): Promise<cri.VersionResponse>;
  status(verbose?: boolean): Promise<cri.StatusResponse>;
  runPodSandbox(config: cri.PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(podSandboxId: string): Promise<void>;
  removePodSandbox(podSandboxId: string): Promise<void>;
  podSandboxStatus(podSandboxId: string, verbose?: boolean): Promise<cri.PodSandboxStatusResponse>;
  listPodSandbox(filter?: cri.PodSandboxFilter): Promise<readonly cri.PodSandbox[]>;
  createContainer(
    podSandboxId: string,
    config: cri.ContainerConfig,
    sandboxConfig: cri.PodSandboxConfig,
  ): Promise<string>;
  startContainer(containerId: string): Promise<void>;
  stopContainer(containerId: string, timeoutSeconds: number): Promise<void>;
  removeContainer(containerId: string): Promise<void>;
  listContainers(filter?: cri.ContainerFilter): Promise<readonly cri.Container[]>;
  containerStatus(containerId: string, verbose?: boolean): Promise<cri.ContainerStatusResponse>;
  /** `signal` cancels the call: the command is ended (as containerd does when the call's context is cancelled). */
  execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds?: number,
    signal?: AbortSignal,
  ): Promise<cri.ExecSyncResponse>;
  exec(req: cri.ExecRequest): Promise<string>;
  attach(req: cri.AttachRequest): Promise<string>;
  portForward(req: cri.PortForwardRequest): Promise<string>;
  /** Over gRPC, without the containers' annotations and swap usage (the kubelet reads neither: cri/stats-wire.ts). */
  listContainerStats(filter?: cri.ContainerStatsFilter): Promise<cri.ContainerStats[]>;
  /**
   * Over gRPC, without each sandbox's container stats (listContainerStats has them), labels and
   * annotations: the kubelet reads a sandbox's CPU, memory, network and process stats.
   */
  listPodSandboxStats(filter?: cri.PodSandboxStatsFilter): Promise<cri.PodSandboxStats[]>;
  reopenContainerLog(containerId: string): Promise<void>;
  /**
   * CRI RuntimeConfig: the runtime's cgroup driver (absent: the runtime does not say; the kubelet's config decides).
   */
  runtimeConfig?(): Promise<cri.RuntimeConfigResponse>;
  /**
   * CRI UpdateRuntimeConfig: the node's pod CIDRs (comma-separated), which a runtime's network set-up may use
   * (containerd's CNI config template). Absent: the runtime has nothing to do with it.
   */
  updateRuntimeConfig?(config: cri.RuntimeConfig): Promise<void>;
  /** CRI UpdateContainerResources, Linux part (absent: the runtime cannot change a running container's resources). */
  updateContainerResources?(containerId: string, linux: cri.LinuxContainerResources): Promise<void>;
  /**
   * CRI UpdatePodSandboxResources: tells the runtime the pod's new resources after the kubelet resized its cgroup
   * (absent: the runtime is not told; a runtime without it answers Unimplemented).
   */
  updatePodSandboxResources?(req: cri.UpdatePodSandboxResourcesRequest): Promise<void>;
  /** CRI CheckpointContainer (absent: the runtime cannot checkpoint). */
  checkpointContainer?(req: cri.CheckpointContainerRequest): Promise<void>;
}

/** runtime.v1.ImageService. */
export interface ImageService {
  listImages(filter?: cri.ImageSpec): Promise<cri.Image[]>;
  /** The image, or null when it is not present. */
  imageStatus(image: cri.ImageSpec): Promise<cri.Image | null>;
  /** Pulls and returns the image ref. */
  pullImage(image: cri.ImageSpec, auth?: cri.AuthConfig, sandboxConfig?: cri.PodSandboxConfig): Promise<string>;
  removeImage(image: cri.ImageSpec): Promise<void>;
  imageFsInfo(): Promise<cri.ImageFsInfo>;
}

/** Both services, as one runtime endpoint provides them. */
export interface CriRuntime {
  runtime: RuntimeService;
  images: ImageService;
  close?(): void;
}

/** The CRI API version we speak. */
export const CRI_API_VERSION = 'v1';
