/**
 * The CRI client's V(10) lines, as upstream's cri-client writes them: one when a call goes out
 * ("[RemoteRuntimeService] RunPodSandbox") and one when it returns ("… Response"), with the ids
 * the call is about, so that `--v=10` shows every call and how long it took (pure).
 *
 * Unlike upstream, a request's configuration is never logged (upstream logs the whole
 * PodSandboxConfig, environment values included): only ids, names, counts and the duration. What
 * is logged is chosen per method below; an unknown method logs its name alone.
 */
import type * as cri from '../../cri/types.js';
import { messageOf } from '../../lib/errors.js';

type Fields = Record<string, unknown>;
type Args = readonly unknown[];

const sandboxId = (a: Args): Fields => ({ podSandboxID: a[0] });
const containerId = (a: Args): Fields => ({ containerID: a[0] });
const containerOf = (a: Args): Fields => ({
  containerID: (a[0] as { container_id?: string } | undefined)?.container_id,
});
const filter = (a: Args): Fields => (a[0] === undefined ? {} : { filter: a[0] });
const image = (a: Args): Fields => ({ image: (a[0] as cri.ImageSpec | undefined)?.image });

/** What a call's request line carries, by method (RuntimeService and ImageService). */
const REQUEST: Record<string, (a: Args) => Fields> = {
  version: (a) => ({ apiVersion: a[0] }),
  runPodSandbox: (a) => {
    const m = (a[0] as cri.PodSandboxConfig | undefined)?.metadata;
    return { pod: m && `${m.namespace}/${m.name}`, podUID: m?.uid, attempt: m?.attempt, runtimeHandler: a[1] ?? '' };
  },
  stopPodSandbox: sandboxId,
  removePodSandbox: sandboxId,
  podSandboxStatus: sandboxId,
  listPodSandbox: filter,
  createContainer: (a) => {
    const m = (a[1] as cri.ContainerConfig | undefined)?.metadata;
    return { podSandboxID: a[0], container: m?.name, attempt: m?.attempt };
  },
  startContainer: containerId,
  stopContainer: (a) => ({ containerID: a[0], timeout: a[1] }),
  removeContainer: containerId,
  listContainers: filter,
  containerStatus: containerId,
  // The command is not logged: an exec probe's arguments are the pod's to keep.
  execSync: (a) => ({ containerID: a[0], timeout: a[2] }),
  exec: containerOf,
  attach: containerOf,
  portForward: (a) => {
    const r = a[0] as cri.PortForwardRequest | undefined;
    return { podSandboxID: r?.pod_sandbox_id, port: r?.port };
  },
  listContainerStats: filter,
  listPodSandboxStats: filter,
  reopenContainerLog: containerId,
  updateRuntimeConfig: (a) => ({ podCIDR: (a[0] as cri.RuntimeConfig | undefined)?.network_config?.pod_cidr }),
  updateContainerResources: containerId,
  updatePodSandboxResources: (a) => ({
    podSandboxID: (a[0] as cri.UpdatePodSandboxResourcesRequest | undefined)?.pod_sandbox_id,
  }),
  checkpointContainer: containerOf,
  listImages: filter,
  imageStatus: image,
  // Never the registry credentials (the second argument).
  pullImage: image,
  removeImage: image,
};

/** The request fields of a call (none for a method the table does not name, Object's own included). */
const requestFields = (method: string, args: Args): Fields =>
  Object.hasOwn(REQUEST, method) ? REQUEST[method](args) : {};

/** The service's tag in the line, as upstream's. */
export type CriService = 'RemoteRuntimeService' | 'RemoteImageService';

/** Upstream's method name: runPodSandbox → RunPodSandbox. */
const upper = (method: string) => method.charAt(0).toUpperCase() + method.slice(1);

/** The line logged when a call goes out. */
export function criRequestLine(service: CriService, method: string, args: Args): { msg: string; fields: Fields } {
  return { msg: `[${service}] ${upper(method)}`, fields: requestFields(method, args) };
}

/**
 * The line logged when a call returns: the request's ids, what the call made (a sandbox's or a
 * container's id, a pulled image's ref), a list's length, the error when it failed, and how long
 * it took (Go's duration text).
 */
export function criResponseLine(
  service: CriService,
  method: string,
  args: Args,
  outcome: { result?: unknown; error?: unknown },
  duration: string,
): { msg: string; fields: Fields } {
  const fields = requestFields(method, args);
  if (outcome.error !== undefined) fields.err = messageOf(outcome.error);
  else if (method === 'runPodSandbox') fields.podSandboxID = outcome.result;
  else if (method === 'createContainer') fields.containerID = outcome.result;
  else if (method === 'pullImage') fields.imageRef = outcome.result;
  else if (Array.isArray(outcome.result)) fields.items = outcome.result.length;
  fields.duration = duration;
  return { msg: `[${service}] ${upper(method)} Response`, fields };
}
