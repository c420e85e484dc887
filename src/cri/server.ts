/**
 * Serves a RuntimeService/ImageService implementation over gRPC (used by the process-runtime
 * daemon), on grpc-js (grpc-server.ts). Each RPC unwraps the request into the
 * interface's arguments and wraps the answer back into the response message; thrown
 * KubeletErrors become gRPC statuses; the streaming methods (GetContainerEvents) answer
 * UNIMPLEMENTED.
 */
import { serveUnary, type UnaryHandler } from './grpc-server.js';
import { GrpcCallError, GrpcCode } from './grpc-status.js';
import { criMethods } from './proto.js';
import { toGrpcError } from './grpc-errors.js';
import type { ImageService, RuntimeService } from './services.js';
import type * as cri from './types.js';

/** The request messages as proto-loader decodes them (keepCase, enums as strings, longs as numbers). */
interface Requests {
  Version: { version: string };
  Status: { verbose?: boolean };
  RunPodSandbox: { config: cri.PodSandboxConfig; runtime_handler?: string };
  StopPodSandbox: { pod_sandbox_id: string };
  RemovePodSandbox: { pod_sandbox_id: string };
  PodSandboxStatus: { pod_sandbox_id: string; verbose?: boolean };
  ListPodSandbox: { filter?: cri.PodSandboxFilter | null };
  CreateContainer: { pod_sandbox_id: string; config: cri.ContainerConfig; sandbox_config: cri.PodSandboxConfig };
  StartContainer: { container_id: string };
  StopContainer: { container_id: string; timeout: number | string };
  RemoveContainer: { container_id: string };
  ListContainers: { filter?: cri.ContainerFilter | null };
  ContainerStatus: { container_id: string; verbose?: boolean };
  ExecSync: { container_id: string; cmd: string[]; timeout: number | string };
  Exec: cri.ExecRequest;
  Attach: cri.AttachRequest;
  PortForward: cri.PortForwardRequest;
  ListContainerStats: { filter?: cri.ContainerStatsFilter | null };
  ListPodSandboxStats: { filter?: cri.PodSandboxStatsFilter | null };
  ReopenContainerLog: { container_id: string };
  RuntimeConfig: Record<string, never>;
  UpdateRuntimeConfig: { runtime_config?: cri.RuntimeConfig | null };
  UpdateContainerResources: { container_id: string; linux?: cri.LinuxContainerResources | null };
  UpdatePodSandboxResources: cri.UpdatePodSandboxResourcesRequest;
  ListImages: { filter?: { image?: cri.ImageSpec | null } | null };
  ImageStatus: { image: cri.ImageSpec };
  PullImage: { image: cri.ImageSpec; auth?: cri.AuthConfig; sandbox_config?: cri.PodSandboxConfig };
  RemoveImage: { image: cri.ImageSpec };
  ImageFsInfo: Record<string, never>;
}
type Handlers<K extends keyof Requests> = { [M in K]: (q: Requests[M], signal: AbortSignal) => Promise<unknown> };

/** The unary handlers of both services, by HTTP/2 path ("/runtime.v1.RuntimeService/Version"). */
export function criHandlers(rt: RuntimeService, img: ImageService) {
  const runtime: Handlers<
    | 'Version'
    | 'Status'
    | 'RunPodSandbox'
    | 'StopPodSandbox'
    | 'RemovePodSandbox'
    | 'PodSandboxStatus'
    | 'ListPodSandbox'
    | 'CreateContainer'
    | 'StartContainer'
    | 'StopContainer'
    | 'RemoveContainer'
    | 'ListContainers'
    | 'ContainerStatus'
    | 'ExecSync'
    | 'Exec'
    | 'Attach'
    | 'PortForward'
    | 'ListContainerStats'
    | 'ListPodSandboxStats'
    | 'ReopenContainerLog'
  > = {
    Version: (q) => rt.version(q.version),
    Status: (q) => rt.status(q.verbose),
    RunPodSandbox: async (q) => ({ pod_sandbox_id: await rt.runPodSandbox(q.config, q.runtime_handler) }),
    StopPodSandbox: (q) => rt.stopPodSandbox(q.pod_sandbox_id),
    RemovePodSandbox: (q) => rt.removePodSandbox(q.pod_sandbox_id),
    PodSandboxStatus: (q) => rt.podSandboxStatus(q.pod_sandbox_id, q.verbose),
    ListPodSandbox: async (q) => ({ items: await rt.listPodSandbox(q.filter ?? undefined) }),
    CreateContainer: async (q) => ({
      container_id: await rt.createContainer(q.pod_sandbox_id, q.config, q.sandbox_config),
    }),
    StartContainer: (q) => rt.startContainer(q.container_id),
    StopContainer: (q) => rt.stopContainer(q.container_id, Number(q.timeout)),
    RemoveContainer: (q) => rt.removeContainer(q.container_id),
    ListContainers: async (q) => ({ containers: await rt.listContainers(q.filter ?? undefined) }),
    ContainerStatus: (q) => rt.containerStatus(q.container_id, q.verbose),
    ExecSync: (q, signal) => rt.execSync(q.container_id, q.cmd, Number(q.timeout), signal),
    Exec: async (q) => ({ url: await rt.exec(q) }),
    Attach: async (q) => ({ url: await rt.attach(q) }),
    PortForward: async (q) => ({ url: await rt.portForward(q) }),
    ListContainerStats: async (q) => ({ stats: await rt.listContainerStats(q.filter ?? undefined) }),
    ListPodSandboxStats: async (q) => ({ stats: await rt.listPodSandboxStats(q.filter ?? undefined) }),
    ReopenContainerLog: (q) => rt.reopenContainerLog(q.container_id),
  };
  // Optional in the interface: a runtime without it answers UNIMPLEMENTED, as containerd before 2.0.
  const optional: Partial<
    Handlers<'RuntimeConfig' | 'UpdateRuntimeConfig' | 'UpdateContainerResources' | 'UpdatePodSandboxResources'>
  > = {
    ...(rt.runtimeConfig ? { RuntimeConfig: () => rt.runtimeConfig!() } : {}),
    ...(rt.updateRuntimeConfig
      ? {
          UpdateRuntimeConfig: (q: Requests['UpdateRuntimeConfig']) => rt.updateRuntimeConfig!(q.runtime_config ?? {}),
        }
      : {}),
    ...(rt.updateContainerResources
      ? {
          UpdateContainerResources: (q: Requests['UpdateContainerResources']) =>
            rt.updateContainerResources!(q.container_id, q.linux ?? {}),
        }
      : {}),
    ...(rt.updatePodSandboxResources
      ? {
          UpdatePodSandboxResources: (q: Requests['UpdatePodSandboxResources']) => rt.updatePodSandboxResources!(q),
        }
      : {}),
  };
  const image: Handlers<'ListImages' | 'ImageStatus' | 'PullImage' | 'RemoveImage' | 'ImageFsInfo'> = {
    ListImages: async (q) => ({ images: await img.listImages(q.filter?.image ?? undefined) }),
    ImageStatus: async (q) => ({ image: await img.imageStatus(q.image) }),
    PullImage: async (q) => ({ image_ref: await img.pullImage(q.image, q.auth, q.sandbox_config) }),
    RemoveImage: (q) => img.removeImage(q.image),
    ImageFsInfo: () => img.imageFsInfo(),
  };
  const out: Record<string, UnaryHandler> = {};
  const wrap = (
    service: 'RuntimeService' | 'ImageService',
    impl: Partial<Record<string, (q: never, signal: AbortSignal) => Promise<unknown>>>,
  ) => {
    for (const [name, def] of Object.entries(criMethods(service))) {
      const fn = impl[name];
      out[def.path] = {
        requestDeserialize: (b) => def.requestDeserialize(b),
        responseSerialize: (r) => def.responseSerialize(r as object),
        handle: async (q, signal) => {
          if (!fn || def.responseStream) throw new GrpcCallError(GrpcCode.UNIMPLEMENTED, `${name} is not implemented`);
          try {
            return (await fn(q as never, signal)) ?? {};
          } catch (err) {
            throw toGrpcError(err);
          }
        },
      };
    }
  };
  wrap('RuntimeService', { ...runtime, ...optional });
  wrap('ImageService', image);
  return out;
}

/** Serves the runtime's CRI on `address` ("unix:///run/x.sock" or a socket path). */
export function serveCri(address: string, rt: RuntimeService, img: ImageService): Promise<{ close(): Promise<void> }> {
  return serveUnary(address.replace(/^unix:\/\//, ''), criHandlers(rt, img), 0o660);
}
