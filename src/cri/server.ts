/**
 * Serves a RuntimeService/ImageService implementation over gRPC (used by the process-runtime
 * daemon). Each RPC unwraps the request into the interface's arguments and wraps the answer back
 * into the response message; thrown KubeletErrors become gRPC statuses.
 */
import * as grpc from '@grpc/grpc-js';
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
  ListImages: { filter?: { image?: cri.ImageSpec | null } | null };
  ImageStatus: { image: cri.ImageSpec };
  PullImage: { image: cri.ImageSpec; auth?: cri.AuthConfig; sandbox_config?: cri.PodSandboxConfig };
  RemoveImage: { image: cri.ImageSpec };
  ImageFsInfo: Record<string, never>;
}
type Handlers<K extends keyof Requests> = { [M in K]: (q: Requests[M]) => Promise<unknown> };

function unary<Q>(fn: (q: Q) => Promise<unknown>): grpc.handleUnaryCall<Q, unknown> {
  return (call, cb) => {
    fn(call.request).then(
      (res) => {
        cb(null, res ?? {});
      },
      (err: unknown) => {
        cb(toGrpcError(err) as grpc.ServiceError);
      },
    );
  };
}

function unimplemented(name: string, streaming: boolean): grpc.UntypedHandleCall {
  const error = { code: grpc.status.UNIMPLEMENTED, details: `${name} is not implemented` } as grpc.ServiceError;
  if (streaming) return ((call: grpc.ServerWritableStream<unknown, unknown>) => call.emit('error', error)) as grpc.UntypedHandleCall;
  return ((_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
    cb(error);
  }) as grpc.UntypedHandleCall;
}

/** Builds the gRPC handler maps for both services. */
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
    CreateContainer: async (q) => ({ container_id: await rt.createContainer(q.pod_sandbox_id, q.config, q.sandbox_config) }),
    StartContainer: (q) => rt.startContainer(q.container_id),
    StopContainer: (q) => rt.stopContainer(q.container_id, Number(q.timeout)),
    RemoveContainer: (q) => rt.removeContainer(q.container_id),
    ListContainers: async (q) => ({ containers: await rt.listContainers(q.filter ?? undefined) }),
    ContainerStatus: (q) => rt.containerStatus(q.container_id, q.verbose),
    ExecSync: (q) => rt.execSync(q.container_id, q.cmd, Number(q.timeout)),
    Exec: async (q) => ({ url: await rt.exec(q) }),
    Attach: async (q) => ({ url: await rt.attach(q) }),
    PortForward: async (q) => ({ url: await rt.portForward(q) }),
    ListContainerStats: async (q) => ({ stats: await rt.listContainerStats(q.filter ?? undefined) }),
    ListPodSandboxStats: async (q) => ({ stats: await rt.listPodSandboxStats(q.filter ?? undefined) }),
    ReopenContainerLog: (q) => rt.reopenContainerLog(q.container_id),
  };
  const image: Handlers<'ListImages' | 'ImageStatus' | 'PullImage' | 'RemoveImage' | 'ImageFsInfo'> = {
    ListImages: async (q) => ({ images: await img.listImages(q.filter?.image ?? undefined) }),
    ImageStatus: async (q) => ({ image: await img.imageStatus(q.image) }),
    PullImage: async (q) => ({ image_ref: await img.pullImage(q.image, q.auth, q.sandbox_config) }),
    RemoveImage: (q) => img.removeImage(q.image),
    ImageFsInfo: async () => ({ image_filesystems: await img.imageFsInfo() }),
  };
  const wrap = (service: 'RuntimeService' | 'ImageService', impl: Partial<Record<string, (q: never) => Promise<unknown>>>) => {
    const out: grpc.UntypedServiceImplementation = {};
    for (const [name, def] of Object.entries(criMethods(service))) {
      const fn = impl[name];
      out[name] = fn ? (unary(fn) as grpc.UntypedHandleCall) : unimplemented(name, def.responseStream);
    }
    return out;
  };
  return { runtime: wrap('RuntimeService', runtime), image: wrap('ImageService', image) };
}

/** Starts a gRPC server for the runtime on `address` (e.g. "unix:///run/x.sock"). */
export async function serveCri(address: string, rt: RuntimeService, img: ImageService): Promise<grpc.Server> {
  const server = new grpc.Server();
  const h = criHandlers(rt, img);
  server.addService(criMethods('RuntimeService') as grpc.ServiceDefinition, h.runtime);
  server.addService(criMethods('ImageService') as grpc.ServiceDefinition, h.image);
  await new Promise<void>((resolve, reject) => server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return server;
}
