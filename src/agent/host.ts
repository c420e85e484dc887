/**
 * The agent's side of the routes' host interface: read-only views over the pod manager, the
 * status manager and the runtime. Structurally a `KubeletHost` (the agent does not import
 * routes; main.ts checks the fit at compile time).
 */
import { rfc3339 } from '../lib/time.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { allContainers } from '../api/containers.js';
import type { Pod, PodStatus } from '../api/types.js';
import { badRequest, notFound } from '../lib/errors.js';
import type { Clock } from '../lib/clock.js';
import type { PodManager } from './pods/pod-manager.js';
import type { StatusManager } from './status/status-manager.js';
import type { RuntimeManager } from './runtime/runtime-manager.js';
import { readLogs } from './runtime/logs/read-logs.js';
import type { SyncLoop } from './sync/sync-loop.js';
import type { GenericPleg } from './pleg/generic-pleg.js';
import type { StreamRequest } from '../streaming/stream-request.js';

/** What the host view needs. */
export interface AgentHostDeps {
  nodeName: string;
  podManager: PodManager;
  statusManager: StatusManager;
  runtimeManager: RuntimeManager;
  syncLoop: SyncLoop;
  pleg: GenericPleg;
  clock: Clock;
  syncFrequencyMs: number;
  /** The runtime's health (CRI Status), for /healthz. */
  runtimeState: { runtimeError(): string | undefined };
  /** <root-dir>: checkpoints go to its `checkpoints` directory. */
  rootDir?: string;
  /** Whether the runtime's streaming server speaks WebSocket v5 itself (the embedded runtime does). */
  runtimeServesWebSocketV5?: boolean;
}

/** Log options as the host accepts them. */
export interface LogOptions {
  follow?: boolean;
  previous?: boolean;
  timestamps?: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceNs?: bigint;
}

/** Builds the host view. */
export function createAgentHost(d: AgentHostDeps) {
  // The pod with its latest status: the same object while neither changes (/pods keeps each pod's JSON by it).
  const merged = new WeakMap<Pod, { status: PodStatus | undefined; pod: Pod }>();
  const withStatus = (p: Pod): Pod => {
    const status = d.statusManager.get(p.metadata.uid!);
    const m = merged.get(p);
    if (m && m.status === status) return m.pod;
    const pod = status ? { ...p, status } : p;
    merged.set(p, { status, pod });
    return pod;
  };
  const podFor = (req: { namespace: string; podName: string; podUid?: string }): Pod => {
    const pod = d.podManager.getPodByName(req.namespace, req.podName);
    if (!pod || (req.podUid && req.podUid !== pod.metadata.uid))
      throw notFound(
        `pod ${req.namespace}/${req.podName}${req.podUid ? ` with uid ${req.podUid}` : ''} does not exist`,
      );
    return pod;
  };
  /** The running instance of a container (upstream findContainer + the running check). */
  const runningContainer = async (req: {
    namespace: string;
    podName: string;
    podUid?: string;
    containerName: string;
  }) => {
    const pod = podFor(req);
    if (!allContainers(pod).some((c) => c.name === req.containerName))
      throw notFound(`container not found ("${req.containerName}")`);
    const rs = await d.runtimeManager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!);
    const running = rs.containers.find((c) => c.name === req.containerName && c.state === 'running');
    if (!running)
      throw badRequest(`container ${req.containerName} is not valid for pod ${req.podName}: container not running`);
    return running;
  };
  return {
    nodeName: d.nodeName,
    runtimeServesWebSocketV5: d.runtimeServesWebSocketV5 ?? false,
    getPods: (): Pod[] => d.podManager.getPods().map(withStatus),
    podsVersion: (): string => `${d.podManager.generation}.${d.statusManager.generation}`,
    getPodByName: (ns: string, name: string): Pod | undefined => {
      const p = d.podManager.getPodByName(ns, name);
      return p && withStatus(p);
    },
    async getRunningPods(): Promise<Pod[]> {
      const pods = await d.runtimeManager.listRuntimePods();
      return pods.map((rp) => ({
        metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid, creationTimestamp: null as unknown as string },
        spec: {
          containers: rp.containers
            .filter((c) => c.state === 'CONTAINER_RUNNING')
            .map((c) => ({
              name: c.metadata.name,
              image: c.image?.user_specified_image || c.image?.image || c.image_ref,
              resources: {},
            })),
        },
        status: {},
      }));
    },
    async getStreamUrl(req: StreamRequest): Promise<string> {
      if (req.kind === 'portForward') {
        const pod = podFor(req);
        const rs = await d.runtimeManager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!);
        const sandbox = rs.sandboxes.find((s) => s.ready);
        if (!sandbox) throw badRequest(`pod ${req.namespace}/${req.podName} has no running sandbox`);
        return d.runtimeManager.portForwardUrl(sandbox.id, req.ports);
      }
      const running = await runningContainer(req);
      return req.kind === 'exec'
        ? d.runtimeManager.execUrl(running.id, req.command, req.flags)
        : d.runtimeManager.attachUrl(running.id, req.flags);
    },
    /**
     * Upstream Kubelet.CheckpointContainer: `<root-dir>/checkpoints/checkpoint-<name>_<namespace>-<container>-<RFC 3339
     * time>.tar`.
     */
    async checkpointContainer(req: {
      namespace: string;
      podName: string;
      containerName: string;
      timeoutSeconds?: number;
    }): Promise<string> {
      const pod = d.podManager.getPodByName(req.namespace, req.podName);
      if (!pod) throw notFound('pod does not exist');
      if (!allContainers(pod).some((c) => c.name === req.containerName))
        throw notFound(`container ${req.containerName} does not exist`);
      const rs = await d.runtimeManager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!);
      const c = rs.containers.find((x) => x.name === req.containerName && x.state === 'running');
      if (!c) throw new Error(`container ${req.containerName} not found`);
      const dir = join(d.rootDir ?? '/var/lib/kubelet', 'checkpoints');
      const at = rfc3339(d.clock.now());
      const location = join(dir, `checkpoint-${req.podName}_${req.namespace}-${req.containerName}-${at}.tar`);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await d.runtimeManager.checkpointContainer({ container_id: c.id, location, timeout: req.timeoutSeconds ?? 0 });
      return location;
    },
    async runInContainer(req: {
      namespace: string;
      podName: string;
      podUid?: string;
      containerName: string;
      command: string[];
      signal?: AbortSignal;
    }): Promise<Buffer> {
      const running = await runningContainer(req);
      const r = await d.runtimeManager.execSync(running.id, req.command, req.signal);
      return Buffer.concat([r.stdout, r.stderr]);
    },
    async getContainerLogs(req: {
      namespace: string;
      podName: string;
      containerName: string;
      options: LogOptions;
      out: Writable;
      signal: AbortSignal;
    }): Promise<void> {
      const pod = d.podManager.getPodByName(req.namespace, req.podName);
      if (!pod) throw notFound(`pod "${req.podName}" does not exist`);
      if (!allContainers(pod).some((c) => c.name === req.containerName))
        throw notFound(`container "${req.containerName}" not found in pod "${req.podName}"`);
      // Which instance: upstream validateContainerLogStatus, over the API status.
      const st = d.statusManager.get(pod.metadata.uid!);
      const cs = [
        ...(st?.containerStatuses ?? []),
        ...(st?.initContainerStatuses ?? []),
        ...(st?.ephemeralContainerStatuses ?? []),
      ].find((c) => c.name === req.containerName);
      const last = cs?.lastState.terminated;
      let cid: string | undefined;
      if (req.options.previous) {
        if (!last?.containerID)
          throw badRequest(`previous terminated container "${req.containerName}" in pod "${req.podName}" not found`);
        cid = last.containerID;
      } else if (cs?.state.running) cid = cs.containerID;
      else if (cs?.state.terminated) cid = cs.state.terminated.containerID || last?.containerID;
      else if (last) cid = last.containerID;
      else {
        const reason = cs?.state.waiting?.reason ?? 'ContainerCreating';
        const why =
          reason === 'ErrImagePull'
            ? "image can't be pulled"
            : reason === 'ImagePullBackOff'
              ? 'trying and failing to pull image'
              : reason;
        throw badRequest(`container "${req.containerName}" in pod "${req.podName}" is waiting to start: ${why}`);
      }
      if (!cid) throw badRequest(`container "${req.containerName}" in pod "${req.podName}" is terminated`);
      const rs = await d.runtimeManager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!);
      const target = rs.containers.find((c) => cid!.endsWith(`://${c.id}`));
      if (!target)
        throw badRequest(
          `container "${req.containerName}" in pod "${req.podName}": instance ${cid} is no longer present`,
        );
      const isRunning = () => d.runtimeManager.containerRunning(target.id);
      try {
        await readLogs(target.logPath, req.options, req.out, { isRunning, signal: req.signal });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT')
          throw badRequest(`failed to try resolving symlinks in path "${target.logPath}": no such file or directory`);
        throw err;
      }
    },
    healthChecks: () => [
      {
        name: 'syncloop',
        check: () => {
          const threshold = Math.max(5 * 60_000, 2 * d.syncFrequencyMs);
          const last = d.syncLoop.lastIterationAt();
          const age = d.clock.monotonic() - last;
          return last && age <= threshold
            ? undefined
            : `sync Loop took longer than expected (last iteration ${last ? Math.round(age / 1000) + 's ago' : 'never'})`;
        },
      },
      {
        name: 'pleg',
        check: () => {
          const last = d.pleg.lastRelistAt();
          const age = d.clock.monotonic() - last;
          return last && age <= 3 * 60_000
            ? undefined
            : `pleg was last seen active ${last ? Math.round(age / 1000) + 's ago' : 'never'}; threshold is 3m0s`;
        },
      },
      { name: 'runtime', check: () => d.runtimeState.runtimeError() },
    ],
  };
}

/** The host view's type. */
export type AgentHost = ReturnType<typeof createAgentHost>;
