/**
 * The CRI gRPC client: RuntimeService/ImageService over a unix socket (containerd, or our
 * process-runtime daemon). Every call has a deadline; errors are mapped to the error catalog;
 * the channel (grpc-channel.ts, grpc-js) reconnects after a drop within its back-off, so a
 * restarted runtime is picked up within seconds.
 */
import { criMethods } from './proto.js';
import { envValueBytes } from './env-value.js';
import { fromGrpcError } from './grpc-errors.js';
import { reusingListDecoder } from './reused-list-items.js';
import { decodeListContainerStats, decodeListPodSandboxStats } from './stats-wire.js';
import { unaryChannel, type UnaryChannel } from './grpc-channel.js';
import type { UnaryMethod } from './grpc-status.js';
import type { CriRuntime, ImageService, RuntimeService } from './services.js';
import type * as cri from './types.js';

/**
 * runtimeRequestTimeout's default (upstream 2m0s): every call's deadline, except RunPodSandbox
 * (twice it), StopContainer (it plus the grace period), ExecSync (it plus the command's timeout;
 * none for no timeout) and PullImage (none), as upstream's cri-client.
 */
export const DEFAULT_CALL_TIMEOUT_MS = 2 * 60_000;
/** No deadline (the call carries no grpc-timeout). */
const NO_DEADLINE = Infinity;

function caller(channel: UnaryChannel, methods: Record<string, UnaryMethod>, defaultTimeoutMs: number) {
  return async function call<T>(
    method: string,
    req: unknown,
    timeoutMs = defaultTimeoutMs,
    m = methods[method],
    signal?: AbortSignal,
  ): Promise<T> {
    try {
      return (await channel.call(m, req, timeoutMs, signal)) as T;
    } catch (err) {
      throw fromGrpcError(err as { code: number; details?: string; message: string }, method);
    }
  };
}

/** `config` with its env values as the bytes CRI's KeyValue.value is. */
function withEnvBytes(config: cri.ContainerConfig): cri.ContainerConfig {
  if (!config.envs?.length) return config;
  return { ...config, envs: config.envs.map((kv) => ({ key: kv.key, value: envValueBytes(kv.value) })) };
}

/**
 * Connects (lazily) to the CRI endpoint ("unix:///path", "unix:/path", "/path" or "host:port") and returns both
 * services.
 */
export function createCriClient(endpoint: string, o: { requestTimeoutMs?: number } = {}): CriRuntime {
  const T = o.requestTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  // One HTTP/2 connection serves both services, as one grpc-go ClientConn does for upstream.
  const channel = unaryChannel(endpoint, { maxReceiveBytes: 16 * 1024 * 1024 + 1024 });
  const runtimeMethods = criMethods('RuntimeService');
  const r = caller(channel, runtimeMethods, T);
  // Unfiltered lists (the PLEG's, every second) reuse the items that did not change since the last one.
  const reusing = (name: string, field: string, firstMapField: number): UnaryMethod => ({
    ...runtimeMethods[name],
    responseDeserialize: reusingListDecoder(runtimeMethods[name].responseDeserialize, field, firstMapField),
  });
  // The first map field: PodSandbox.labels = 5, Container.labels = 8 (api.proto).
  const allSandboxes = reusing('ListPodSandbox', 'items', 5);
  const allContainers = reusing('ListContainers', 'containers', 8);
  // The stats answers are read from the wire by their own decoders, which skip what the kubelet does not read
  // (services.ts).
  const containerStats: UnaryMethod = {
    ...runtimeMethods.ListContainerStats,
    responseDeserialize: decodeListContainerStats,
  };
  const sandboxStats: UnaryMethod = {
    ...runtimeMethods.ListPodSandboxStats,
    responseDeserialize: decodeListPodSandboxStats,
  };
  const i = caller(channel, criMethods('ImageService'), T);

  const runtime: RuntimeService = {
    version: (v) => r('Version', { version: v }),
    status: async (verbose) => r('Status', { verbose: !!verbose }),
    runPodSandbox: async (config, handler) =>
      (await r<{ pod_sandbox_id: string }>('RunPodSandbox', { config, runtime_handler: handler ?? '' }, 2 * T))
        .pod_sandbox_id,
    stopPodSandbox: async (id) => {
      await r('StopPodSandbox', { pod_sandbox_id: id });
    },
    removePodSandbox: async (id) => {
      await r('RemovePodSandbox', { pod_sandbox_id: id });
    },
    podSandboxStatus: (id, verbose) => r('PodSandboxStatus', { pod_sandbox_id: id, verbose: !!verbose }),
    listPodSandbox: async (filter) =>
      (await r<{ items: cri.PodSandbox[] }>('ListPodSandbox', { filter }, T, filter ? undefined : allSandboxes)).items,
    createContainer: async (sid, config, sandboxConfig) =>
      (
        await r<{ container_id: string }>('CreateContainer', {
          pod_sandbox_id: sid,
          config: withEnvBytes(config),
          sandbox_config: sandboxConfig,
        })
      ).container_id,
    startContainer: async (id) => {
      await r('StartContainer', { container_id: id });
    },
    stopContainer: async (id, timeout) => {
      await r('StopContainer', { container_id: id, timeout }, T + timeout * 1000);
    },
    removeContainer: async (id) => {
      await r('RemoveContainer', { container_id: id });
    },
    listContainers: async (filter) =>
      (await r<{ containers: cri.Container[] }>('ListContainers', { filter }, T, filter ? undefined : allContainers))
        .containers,
    containerStatus: (id, verbose) => r('ContainerStatus', { container_id: id, verbose: !!verbose }),
    execSync: (id, cmd, timeout = 0, signal) =>
      r(
        'ExecSync',
        { container_id: id, cmd, timeout },
        timeout > 0 ? T + timeout * 1000 : NO_DEADLINE,
        undefined,
        signal,
      ),
    exec: async (req) => (await r<{ url: string }>('Exec', req)).url,
    attach: async (req) => (await r<{ url: string }>('Attach', req)).url,
    portForward: async (req) => (await r<{ url: string }>('PortForward', req)).url,
    listContainerStats: async (filter) =>
      (await r<{ stats: cri.ContainerStats[] }>('ListContainerStats', { filter }, T, containerStats)).stats,
    listPodSandboxStats: async (filter) =>
      (await r<{ stats: cri.PodSandboxStats[] }>('ListPodSandboxStats', { filter }, T, sandboxStats)).stats ?? [],
    reopenContainerLog: async (id) => {
      await r('ReopenContainerLog', { container_id: id });
    },
    runtimeConfig: () => r('RuntimeConfig', {}),
    updateRuntimeConfig: async (config) => {
      await r('UpdateRuntimeConfig', { runtime_config: config });
    },
    updateContainerResources: async (id, linux) => {
      await r('UpdateContainerResources', { container_id: id, linux });
    },
    updatePodSandboxResources: async (req) => {
      await r('UpdatePodSandboxResources', req);
    },
    checkpointContainer: async (req) => {
      await r('CheckpointContainer', req, req.timeout ? req.timeout * 1000 : T);
    },
  };
  const images: ImageService = {
    listImages: async (filter) =>
      (await i<{ images: cri.Image[] }>('ListImages', { filter: filter ? { image: filter } : undefined })).images,
    imageStatus: async (image) => (await i<{ image: cri.Image | null }>('ImageStatus', { image })).image ?? null,
    pullImage: async (image, auth, sandboxConfig) =>
      (await i<{ image_ref: string }>('PullImage', { image, auth, sandbox_config: sandboxConfig }, NO_DEADLINE))
        .image_ref,
    removeImage: async (image) => {
      await i('RemoveImage', { image });
    },
    imageFsInfo: async () => {
      const answer = await i<cri.ImageFsInfo>('ImageFsInfo', {});
      return { image_filesystems: answer.image_filesystems, container_filesystems: answer.container_filesystems ?? [] };
    },
  };
  return {
    runtime,
    images,
    close: () => channel.close(),
  };
}
