/**
 * The process runtime: a CRI RuntimeService whose containers are host process groups.
 * A sandbox is a directory; a container is `command + args` run with the container's env and
 * working dir, stdout/stderr written as CRI log files at the kubelet's path, exit codes recorded.
 * Images are not used (see images.ts). State is persisted under `stateDir` (state.ts).
 *
 * Modes: 'in-process' (the kubelet calls it directly; on start it kills and forgets whatever an
 * earlier run left behind, on shutdown it stops its processes) and 'daemon' (served over gRPC by
 * `tskubelet process-runtime`; containers outlive kubelet restarts, and daemon restarts too: their
 * output and exit status go through files (container-io.ts) and a restarted daemon adopts them).
 */
import { messageOf } from '../lib/errors.js';
import { userNamespaceRange, userNamespacesSupported } from './user-namespace.js';
import { applyCdiDevices, DEFAULT_CDI_SPEC_DIRS, readCdiSpecs } from './cdi.js';
import { longTimeout } from '../lib/clock.js';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { KubeletError, badRequest, notFound } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { nowNs } from '../lib/time.js';
import type { RuntimeService } from '../cri/services.js';
import { processRuntimeConfig, processRuntimeStatus, processRuntimeVersion } from './runtime-info.js';
import type * as cri from '../cri/types.js';
import type { CgroupDirs } from '../lib/cgroup-usage.js';
import { StateStore, type ContainerRecord, type SandboxRecord } from './state.js';
import { containerMatches, sandboxMatches } from './filters.js';
import type { ProcessHandle } from './process-handle.js';
import { adoptEarlierRun, forgetEarlierRun } from './recovery.js';
import { launchContainer } from './container-launch.js';
import { loadPty } from './pty.js';
import { envValueText } from '../cri/env-value.js';
import { killMarked, signalGroup } from './proc.js';
import { killSignalOf, stopSignalOf } from './stop-signal.js';
import { sandboxStats, UsageReader } from './container-stats.js';
import { containerStatus, containerView, newContainerRecord, sandboxStatus, sandboxView } from './records.js';
import {
  applyCgroupLimits,
  cgroupDirsOf,
  cgroupPathOf,
  createSandboxCgroup,
  destroyContainerCgroup,
  detectContainerCgroups,
  killCgroup,
  oomKills,
  removeCgroup,
  removeRuntimeCgroups,
  type ContainerCgroups,
} from './container-cgroups.js';
import { StreamingServer } from './streaming-server.js';
import { ContainerSessions } from './container-sessions.js';
import { acquireInstanceLock, type InstanceLock } from '../lib/instance-lock.js';
import { removeMountPoints } from './mount-namespace.js';
import { mayStopAnswering } from './mount-sources.js';

/** What the runtime needs. */
export interface ProcessRuntimeDeps {
  stateDir: string;
  /** The IP reported for every sandbox (host processes share the node's network). */
  podIP: string;
  mode: 'in-process' | 'daemon';
  logger: Logger;
  version: string;
  /** streamingConnectionIdleTimeout for exec/attach/port-forward sessions (ms; default 4h). */
  streamingIdleTimeoutMs?: number;
  /** Where CDI specs are (default /etc/cdi and /var/run/cdi). */
  cdiSpecDirs?: readonly string[];
  /**
   * The kubelet's root dir: mount sources under its pod directories are the kubelet's own; others (hostPath, CSI
   * volumes) are looked at apart, as they may stop answering (mount-sources.ts mayStopAnswering). Default
   * /var/lib/kubelet.
   */
  kubeletRootDir?: string;
}

const newId = () => randomBytes(32).toString('hex');

/** Refuses a user namespace the runtime cannot make: one it cannot map, or any without root or kernel support. */
function checkUserNamespace(options: cri.UserNamespace | null | undefined): void {
  let range;
  try {
    range = userNamespaceRange(options);
  } catch (err) {
    throw badRequest(messageOf(err));
  }
  if (range && !userNamespacesSupported())
    throw badRequest(
      'user namespaces need the process runtime to run as root on a kernel that allows them (user.max_user_namespaces)',
    );
}

/** RuntimeService over host processes. Call `start()` before use and `shutdown()` at the end. */
export class ProcessRuntime implements RuntimeService {
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly handles = new Map<string, ProcessHandle>();
  private readonly usage: UsageReader;
  private readonly store: StateStore;
  private readonly streaming: StreamingServer;
  private readonly sessions: ContainerSessions;

  private lock: InstanceLock | undefined;
  /** The containers' cgroups when running as root (container-cgroups.ts). */
  private cgroups: ContainerCgroups | undefined;
  /** Identifies this runtime's processes (a hash of its state dir); see proc.ts markedProcesses. */
  private readonly runtimeKey: string;
  private readonly markerOf = (id: string): string => `${this.runtimeKey}:${id}`;

  constructor(private readonly deps: ProcessRuntimeDeps) {
    this.store = new StateStore(deps.stateDir);
    this.runtimeKey = createHash('sha256').update(resolve(deps.stateDir)).digest('hex').slice(0, 16);
    this.streaming = new StreamingServer({ logger: deps.logger, idleTimeoutMs: deps.streamingIdleTimeoutMs });
    this.usage = new UsageReader(this.runtimeKey, () => this.cgroups);
    this.sessions = new ContainerSessions({
      containers: this.containers,
      sandboxes: this.sandboxes,
      handles: this.handles,
      streaming: this.streaming,
      cgroups: () => this.cgroups,
      markerOf: (id) => this.markerOf(id),
      mayHang: (source) => mayStopAnswering(source, this.deps.kubeletRootDir ?? '/var/lib/kubelet'),
    });
  }

  /** Loads persisted state and deals with what an earlier run left behind (see the class doc). */
  async start(): Promise<void> {
    // Before anything in the state dir is read or killed: a second runtime on it changes nothing.
    this.lock = await acquireInstanceLock(this.deps.stateDir, 'process runtime state directory');
    await mkdir(this.deps.stateDir, { recursive: true });
    await this.streaming.start();
    await this.store.removeTemporaryFiles();
    this.cgroups = await detectContainerCgroups(this.runtimeKey);
    if (this.cgroups)
      this.deps.logger.info({ cgroups: this.cgroups.roots }, 'process runtime: each container gets a cgroup');
    const { sandboxes, containers } = await this.store.loadAll();
    const recovery = {
      store: this.store,
      logger: this.deps.logger,
      runtimeKey: this.runtimeKey,
      cgroups: this.cgroups,
      ioDirOf: (id: string) => this.ioDirOf(id),
    };
    if (this.deps.mode === 'in-process')
      return forgetEarlierRun(recovery, sandboxes, containers, join(this.deps.stateDir, 'io'));
    for (const s of sandboxes) this.sandboxes.set(s.id, s);
    for (const c of containers) this.containers.set(c.id, c);
    await adoptEarlierRun(recovery, sandboxes, containers, (c, h) => {
      this.handles.set(c.id, h);
      this.watchExit(c, h);
    });
  }

  private readonly ioDirOf = (id: string): string => join(this.deps.stateDir, 'io', id);
  private readonly scratchDirOf = (id: string): string => join(this.deps.stateDir, 'scratch', id);

  /**
   * In-process mode: stops every container and forgets them. Daemon mode: leaves detached
   * containers running for the next daemon to adopt (as containerd's shims outlive containerd);
   * TTY containers, whose terminal lives in this process, are stopped.
   */
  async shutdown(graceSeconds = 5): Promise<void> {
    await this.streaming.stop();
    const daemon = this.deps.mode === 'daemon';
    await Promise.all(
      [...this.handles.entries()].map(([id, h]) =>
        daemon && h.detach ? h.detach() : this.stopContainer(id, graceSeconds),
      ),
    );
    if (!daemon) {
      for (const id of [...this.sandboxes.keys()]) await this.removePodSandbox(id);
      if (this.cgroups) await removeRuntimeCgroups(this.cgroups);
    }
    this.lock?.release();
  }

  // What it says about itself (runtime-info.ts).
  readonly version = async (): Promise<cri.VersionResponse> => processRuntimeVersion(this.deps.version);
  readonly status = async (): Promise<cri.StatusResponse> => processRuntimeStatus();
  readonly runtimeConfig = async (): Promise<cri.RuntimeConfigResponse> => processRuntimeConfig();
  /** Accepted and kept for nothing: its pods share the node's network, which a pod CIDR does not configure. */
  readonly updateRuntimeConfig = async (_config: cri.RuntimeConfig): Promise<void> => {};

  async runPodSandbox(config: cri.PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    if (!config?.metadata?.uid) throw badRequest('sandbox config metadata is required');
    // Its one handler is the default (runtime-info.ts); another is refused as containerd refuses one it lacks.
    if (runtimeHandler) throw badRequest(`no runtime for "${runtimeHandler}" is configured`);
    checkUserNamespace(config.linux?.security_context?.namespace_options?.userns_options);
    const id = newId();
    const dir = join(this.deps.stateDir, 'pods', id);
    await mkdir(dir, { recursive: true });
    if (config.log_directory) await mkdir(config.log_directory, { recursive: true });
    const rec: SandboxRecord = {
      id,
      config,
      state: 'SANDBOX_READY',
      createdAtNs: nowNs().toString(),
      dir,
      ip: this.deps.podIP,
      runtimeHandler,
    };
    // The pod's cgroup, with the limits the kubelet computed for the pod (its pod cgroup's on other runtimes).
    if (this.cgroups) await createSandboxCgroup(this.cgroups, id, config.linux?.resources ?? undefined);
    this.sandboxes.set(id, rec);
    await this.store.saveSandbox(rec);
    return id;
  }

  /**
   * CRI UpdatePodSandboxResources: the pod's new limits written into its sandbox's cgroup (the
   * kubelet resizing a pod in place) and kept in its record.
   */
  async updatePodSandboxResources(req: cri.UpdatePodSandboxResourcesRequest): Promise<void> {
    const s = this.sandboxes.get(req.pod_sandbox_id);
    if (!s) throw notFound(`failed to get sandbox "${req.pod_sandbox_id}": not found`);
    const resources = { ...s.config.linux?.resources, ...req.resources };
    if (this.cgroups && s.state === 'SANDBOX_READY') await applyCgroupLimits(this.cgroups, s.id, resources);
    s.config = { ...s.config, linux: { ...s.config.linux, resources } };
    await this.store.saveSandbox(s);
  }

  async stopPodSandbox(id: string): Promise<void> {
    const s = this.sandboxes.get(id);
    if (!s) return;
    const inside = [...this.containers.values()].filter((c) => c.sandboxId === id);
    await Promise.all(inside.map((c) => this.stopContainer(c.id, 0)));
    s.state = 'SANDBOX_NOTREADY';
    await this.store.saveSandbox(s);
  }

  async removePodSandbox(id: string): Promise<void> {
    const s = this.sandboxes.get(id);
    if (!s) return;
    for (const c of [...this.containers.values()].filter((x) => x.sandboxId === id)) await this.removeContainer(c.id);
    this.sandboxes.delete(id);
    await this.store.deleteSandbox(id);
    await rm(s.dir, { recursive: true, force: true });
    if (this.cgroups) await removeCgroup(this.cgroups, id);
  }

  async podSandboxStatus(id: string): Promise<cri.PodSandboxStatusResponse> {
    const s = this.sandboxes.get(id);
    if (!s) throw notFound(`an error occurred when try to find sandbox "${id}": not found`);
    return sandboxStatus(s, Number(nowNs()));
  }

  async listPodSandbox(filter?: cri.PodSandboxFilter): Promise<cri.PodSandbox[]> {
    return [...this.sandboxes.values()].map(sandboxView).filter((s) => sandboxMatches(s, filter));
  }

  async createContainer(
    sandboxId: string,
    config: cri.ContainerConfig,
    sandboxConfig: cri.PodSandboxConfig,
  ): Promise<string> {
    const s = this.sandboxes.get(sandboxId);
    if (!s) throw notFound(`failed to get sandbox "${sandboxId}": not found`);
    if (s.state !== 'SANDBOX_READY') throw badRequest(`sandbox "${sandboxId}" is not ready`);
    if (!config?.metadata?.name) throw badRequest('container config metadata is required');
    checkUserNamespace(config.linux?.security_context?.namespace_options?.userns_options);
    // Containers run from the host's filesystem: there is no image content to mount (a runtime with images does it).
    const imageMount = config.mounts?.find((m) => m.image?.image);
    if (imageMount)
      throw badRequest(
        `image volume at ${imageMount.container_path}: image volumes need a runtime with image content; the process runtime runs containers from the host's filesystem`,
      );
    // The container's processes see the host's /dev: a device (a plugin's, a raw block volume) is
    // its host node bound at the container's path, writable when its permissions say so.
    if (config.devices?.length)
      config = {
        ...config,
        mounts: [
          ...(config.mounts ?? []),
          ...config.devices.map((d) => ({
            container_path: d.container_path,
            host_path: d.host_path,
            readonly: !d.permissions.includes('w'),
          })),
        ],
        devices: [],
      };
    // CDI devices (a device plugin's, a DRA driver's): their specs' edits applied here, as runtimes with CDI do.
    if (config.CDI_devices?.length) {
      try {
        config = applyCdiDevices(config, await readCdiSpecs(this.deps.cdiSpecDirs ?? DEFAULT_CDI_SPEC_DIRS));
      } catch (err) {
        throw badRequest(messageOf(err));
      }
    }
    if (config.tty) await loadPty(); // refused now, with why, where node-pty is not installed
    // Env values arrive as bytes over gRPC (CRI's `bytes`): the record keeps them as the text the process gets.
    if (config.envs?.some((kv) => typeof kv.value !== 'string'))
      config = {
        ...config,
        envs: config.envs.map((kv) => ({ key: kv.key, value: envValueText(kv.value) })),
      };
    const id = newId();
    const rec = newContainerRecord(id, s, config, sandboxConfig, nowNs().toString());
    this.containers.set(id, rec);
    await this.store.saveContainer(rec);
    return id;
  }

  /** Saves a container's record, unless the container has been removed meanwhile (its file is gone for good). */
  private async persist(c: ContainerRecord): Promise<void> {
    if (this.containers.get(c.id) === c) await this.store.saveContainer(c);
  }

  private async failStart(c: ContainerRecord, message: string): Promise<never> {
    Object.assign(c, {
      state: 'CONTAINER_EXITED',
      exitCode: 128,
      reason: 'StartError',
      message,
      startedAtNs: '0',
      finishedAtNs: nowNs().toString(),
    });
    await this.persist(c);
    throw new KubeletError('BadRequest', message);
  }

  async startContainer(id: string): Promise<void> {
    const c = this.containers.get(id);
    if (!c) throw notFound(`container "${id}" not found`);
    if (c.state !== 'CONTAINER_CREATED') throw badRequest(`container "${id}" is in ${c.state} state, not created`);
    // Daemon mode: output and exit status outlive this process (container-io.ts); a TTY cannot.
    const ioDir = this.deps.mode === 'daemon' && !c.config.tty ? this.ioDirOf(id) : undefined;
    const launched = await launchContainer(c, {
      ctx: this.sessions.contextOf(c),
      cgroups: this.cgroups,
      ioDir,
      scratchDir: this.scratchDirOf(id),
    });
    if ('message' in launched) return this.failStart(c, launched.message);
    const h = launched.handle;
    if (this.containers.get(id) !== c) {
      // Removed while it was being started: nothing may outlive the record.
      signalGroup(h.pid, 'SIGKILL');
      killMarked(this.markerOf(id));
      throw notFound(`container "${id}" was removed while it was being started`);
    }
    this.handles.set(id, h);
    Object.assign(c, {
      state: 'CONTAINER_RUNNING',
      startedAtNs: nowNs().toString(),
      pid: h.pid,
      pidStartTime: h.startTime,
    });
    await this.persist(c);
    this.watchExit(c, h);
  }

  /** Records the container's exit when its main process ends. */
  private watchExit(c: ContainerRecord, h: ProcessHandle): void {
    void h.exited.then(async (exit) => {
      this.handles.delete(c.id);
      // As a PID namespace would: when the main process ends, every process of the container ends.
      killMarked(this.markerOf(c.id));
      // The kernel's OOM killer in the container's cgroup makes the exit OOMKilled, as containerd reports it.
      const oomKilled = !!this.cgroups && oomKills(this.cgroups, cgroupPathOf(c)) > 0;
      // Recorded before anything is awaited: a StopContainer waiting on this exit answers after this, and the
      // status read after it says exited, as containerd's does (the kubelet checks that nothing still runs).
      const recorded = this.containers.has(c.id);
      if (recorded)
        Object.assign(c, {
          state: 'CONTAINER_EXITED',
          exitCode: exit.exitCode,
          finishedAtNs: exit.finishedAtNs.toString(),
          reason: oomKilled ? 'OOMKilled' : exit.exitCode === 0 ? 'Completed' : 'Error',
          pid: undefined,
        });
      if (this.cgroups) await killCgroup(this.cgroups, cgroupPathOf(c));
      if (recorded && this.containers.has(c.id)) await this.persist(c).catch(() => {});
    });
  }

  /**
   * CRI UpdateContainerResources: the new limits are written into the running container's cgroup
   * at once and kept in its record (a restarted daemon and the container's status see them).
   */
  async updateContainerResources(id: string, linux: cri.LinuxContainerResources): Promise<void> {
    const c = this.containers.get(id);
    if (!c) throw notFound(`container "${id}" not found`);
    const resources = { ...c.config.linux?.resources, ...linux };
    if (this.cgroups && c.state === 'CONTAINER_RUNNING')
      await applyCgroupLimits(this.cgroups, cgroupPathOf(c), resources);
    c.config = { ...c.config, linux: { ...c.config.linux, resources } };
    await this.persist(c);
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const h = this.handles.get(id);
    if (!h) return;
    // A grace period may be days long: longer than a single Node timer takes.
    const waitExit = (ms: number) =>
      new Promise<boolean>((resolve) => {
        const cancel = longTimeout(() => resolve(false), ms);
        void h.exited.then(() => {
          cancel();
          resolve(true);
        });
      });
    if (timeoutSeconds > 0) {
      const c = this.containers.get(id);
      signalGroup(h.pid, killSignalOf(stopSignalOf(c?.config ?? {})) ?? 'SIGTERM');
      if (await waitExit(timeoutSeconds * 1000)) return;
    }
    signalGroup(h.pid, 'SIGKILL');
    await waitExit(10_000);
  }

  async removeContainer(id: string): Promise<void> {
    const c = this.containers.get(id);
    if (!c) return;
    await this.stopContainer(id, 0);
    this.containers.delete(id);
    this.usage.forget(id);
    await this.store.deleteContainer(id);
    await rm(this.ioDirOf(id), { recursive: true, force: true });
    await rm(this.scratchDirOf(id), { recursive: true, force: true });
    if (this.cgroups) await destroyContainerCgroup(this.cgroups, cgroupPathOf(c));
    // Records of an earlier version: mount points it made on the host. One another container
    // still mounts stays (removing it would detach that mount).
    const inUse = new Set(
      [...this.containers.values()].flatMap((o) => (o.config.mounts ?? []).map((m) => m.container_path)),
    );
    await removeMountPoints(
      (c.createdMountPoints ?? []).filter((p) => ![...inUse].some((u) => u === p || u.startsWith(`${p}/`))),
    );
  }

  async listContainers(filter?: cri.ContainerFilter): Promise<cri.Container[]> {
    return [...this.containers.values()].map(containerView).filter((c) => containerMatches(c, filter));
  }

  /**
   * The directories of a container's cgroup, for the kubelet's cAdvisor details and pressure
   * (in-process only: a daemon's cgroups are read through CRI stats); undefined without cgroups.
   */
  containerCgroupDirs(id: string): CgroupDirs | undefined {
    const c = this.containers.get(id);
    return c && this.cgroups ? cgroupDirsOf(this.cgroups, cgroupPathOf(c)) : undefined;
  }

  async containerStatus(id: string): Promise<cri.ContainerStatusResponse> {
    const c = this.containers.get(id);
    if (!c) throw notFound(`an error occurred when try to find container "${id}": not found`);
    return containerStatus(c);
  }

  // Commands and sessions in a running container (container-sessions.ts).
  async execSync(id: string, cmd: string[], timeoutSeconds = 0, signal?: AbortSignal): Promise<cri.ExecSyncResponse> {
    return this.sessions.execSync(id, cmd, timeoutSeconds, signal);
  }
  async exec(req: cri.ExecRequest): Promise<string> {
    return this.sessions.exec(req);
  }
  async attach(req: cri.AttachRequest): Promise<string> {
    return this.sessions.attach(req);
  }
  async portForward(req: cri.PortForwardRequest): Promise<string> {
    return this.sessions.portForward(req);
  }

  /** CRI ListContainerStats (container-stats.ts): usage of each running container's cgroup or marked processes. */
  async listContainerStats(filter?: cri.ContainerStatsFilter): Promise<cri.ContainerStats[]> {
    const running = (await this.listContainers(filter)).filter((v) => v.state === 'CONTAINER_RUNNING');
    return this.usage.read(running).stats;
  }

  /**
   * CRI ListPodSandboxStats: each ready sandbox's containers, their sums and process count. No
   * network: every sandbox shares the node's network (as for hostNetwork pods on containerd).
   */
  async listPodSandboxStats(filter?: cri.PodSandboxStatsFilter): Promise<cri.PodSandboxStats[]> {
    const sandboxes = (await this.listPodSandbox({ id: filter?.id, label_selector: filter?.label_selector })).filter(
      (s) => s.state === 'SANDBOX_READY',
    );
    const ids = new Set(sandboxes.map((s) => s.id));
    const running = (await this.listContainers()).filter(
      (v) => v.state === 'CONTAINER_RUNNING' && ids.has(v.pod_sandbox_id),
    );
    const { stats, processCounts } = this.usage.read(running);
    return sandboxStats(sandboxes, running, stats, processCounts, Number(nowNs()));
  }

  async reopenContainerLog(id: string): Promise<void> {
    const h = this.handles.get(id);
    if (!h) throw badRequest(`container "${id}" is not running`);
    h.log.reopen();
  }
}
