/**
 * Applies a PodActions plan over CRI (upstream SyncPod, the side-effect half), in this order:
 * - the whole pod is killed when the plan says so (containers with grace, then sandboxes), and the
 *   sync ends there unless a new sandbox is due;
 * - containers that must be replaced are killed;
 * - the sandbox is created when asked — not for a non-hostNetwork pod while the runtime's network
 *   is not ready (upstream "network is not ready: …"); a failure ends this sync;
 * - containers held by their restart backoff are reported (CrashLoopBackOff);
 * - each container to start: its image ensured, the pod's managed /etc/hosts written, the
 *   termination-log file created, the config built (CreateContainerConfigError), the restart
 *   recorded in the backoff table, then created and started. A failed step is recorded with its
 *   upstream reason; later containers still run.
 * Never throws for runtime failures: the next sync retries.
 */
import { withDevices } from '../devices/container-devices.js';
import { readEnvFiles } from './env-file.js';
import { podIPsOf } from './pod-ips.js';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { restartCountFromLogs } from './logs/restart-count-from-logs.js';
import type { Container, EphemeralContainer, Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';
import { logV } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { runtimeDetails } from '../../cri/grpc-errors.js';
import type { PodActions } from './compute-pod-actions.js';
import { generateContainerConfig } from './container-config.js';
import { killPod } from './kill-pod.js';
import { gracePeriodOf } from './grace-period.js';
import { createSandbox, sandboxFailed, SYNC_ERROR_BACKOFF_MS } from './create-sandbox.js';
import { backoffResults } from './backoff-results.js';
import { podDir, readText, terminationLogFile, writeHostsFile } from './pod-files.js';
import { latestContainer, type PodRuntimeStatus, type RuntimeSandbox } from './pod-runtime-status.js';
import { generateSandboxConfig, withUserNamespace } from './sandbox-config.js';
import type { StepResult } from './step-result.js';
import type { PodObjects } from './env.js';
import { credentialsFor, type AuthConfig, type PullSecret } from '../images/keyring.js';
import { podRef } from '../events/recorder.js';
import { prepareSubPaths } from '../volume/container-mounts.js';
import { imageVolumesOf } from '../volume/reconcile.js';
import { preStop, runHook } from './lifecycle-hooks.js';
import { legacyLogSymlink, linkContainerLog } from './logs/legacy-log-links.js';

/** How long a postStart hook may run (upstream has no bound; a stuck hook must not hold the pod worker forever). */
const POST_START_TIMEOUT_MS = 120_000;
import type { MountedVolume } from '../volume/types.js';
import type { ExecutorDeps } from './executor-deps.js';

export type { ExecutorDeps, NodeFacts, StartCounters } from './executor-deps.js';

function specOf(pod: Pod, name: string, init: boolean): Container | undefined {
  return (
    init ? (pod.spec.initContainers ?? []) : [...pod.spec.containers, ...(pod.spec.ephemeralContainers ?? [])]
  ).find((c) => c.name === name);
}

/** Applies plans. */
export class PodActionExecutor {
  constructor(private readonly deps: ExecutorDeps) {}

  /**
   * Applies `plan`; `volumes` are the pod's set-up volumes (volume manager) for the container mounts;
   * `onSandboxCreated` hears of a new sandbox before the first image pull that follows it, so the pod's
   * status can show it while the pull runs (a sync that pulls nothing reports it when it ends).
   */
  async apply(
    pod: Pod,
    status: PodRuntimeStatus,
    plan: PodActions,
    volumes?: ReadonlyMap<string, MountedVolume>,
    onSandboxCreated?: (sandbox: RuntimeSandbox) => void,
  ): Promise<StepResult[]> {
    const { runtime, node } = this.deps;
    const results: StepResult[] = [];
    this.reportFinishedInitContainers(pod, status);
    // Upstream's V(2) line for a sandbox that must be (re)made, and its event when the pod had one.
    if (plan.sandboxChange && this.deps.logger)
      logV(this.deps.logger, 2, { pod: `${pod.metadata.namespace}/${pod.metadata.name}` }, plan.sandboxChange);
    if (plan.createSandbox && status.sandboxes.length)
      this.deps.events?.record(
        podRef(pod),
        'Normal',
        'SandboxChanged',
        'Pod sandbox changed, it will be killed and re-created.',
      );
    // The whole pod goes first; only a new sandbox (a pod being re-created) lets the sync go on after it.
    if (plan.killPod) {
      results.push(
        ...(await killPod(runtime, pod, {
          status,
          events: this.deps.events,
          logger: this.deps.logger,
          counters: this.deps.hookCounters,
        })),
      );
      if (!plan.createSandbox) return results;
    }
    // Containers to replace stop before anything starts, each with its preStop hook and grace period.
    await Promise.all(
      plan.kill.map(async (k) => {
        this.deps.events?.record(
          podRef(pod, { name: k.name }),
          'Normal',
          'Killing',
          k.message ?? `Stopping container ${k.name}`,
        );
        try {
          const grace = k.gracePeriodSeconds ?? gracePeriodOf(pod);
          const left = k.skipPreStop
            ? grace
            : await preStop(pod, specOf(pod, k.name, false) ?? specOf(pod, k.name, true), {
                runtime,
                containerId: k.id,
                podIP: status.sandboxes[0]?.ip ?? '',
                graceSeconds: grace,
                events: this.deps.events,
                logger: this.deps.logger,
                counters: this.deps.hookCounters,
              });
          await runtime.stopContainer(k.id, left);
          results.push({ action: 'KillContainer', target: k.name, ok: true, message: k.message });
        } catch (err) {
          results.push({
            action: 'KillContainer',
            target: k.name,
            ok: false,
            reason: 'KillContainerError',
            message: messageOf(err),
          });
        }
      }),
    );
    // The sandbox. Upstream counts a pod that asked for its own user namespace apart (with UserNamespacesSupport on).
    const userNamespaced = node.userNamespacesSupport === true && pod.spec.hostUsers === false;
    let sandboxId = plan.sandboxId;
    let podIPs = podIPsOf(pod, status.sandboxes[0], node.nodeIP);
    /** Called once before this sync's first image pull, when the sync made a new sandbox. */
    let beforePull: (() => void) | undefined;
    const onPull = () => beforePull?.();
    // Only a plan that creates something needs the sandbox config (and resolv.conf read for it); a
    // periodic sync of a running pod does not.
    if (!plan.createSandbox && !plan.start.length) return backoffResults(pod, plan, results, this.deps.events);
    const built = generateSandboxConfig(pod, plan.attempt, {
      podLogsDir: node.podLogsDir,
      cgroups: node.cgroups,
      resources: node.resources,
      userNamespacesSupport: node.userNamespacesSupport,
      dns: {
        clusterDNS: node.clusterDNS,
        clusterDomain: node.clusterDomain,
        resolvConf: await readText(node.resolvConfPath),
      },
    });
    // Upstream makes the config first in createPodSandbox: a pod that cannot have one (its host name) gets no sandbox.
    if (!built.ok) {
      if (plan.createSandbox) this.deps.counters?.pod(false, userNamespaced);
      results.push(
        sandboxFailed(
          pod,
          'CreatePodSandboxError',
          `Failed to create pod sandbox: ${built.message}`,
          this.deps.events,
          SYNC_ERROR_BACKOFF_MS,
        ),
      );
      return results;
    }
    const sandboxConfig = built.config;
    if (plan.createSandbox) {
      const created = await createSandbox(pod, plan.attempt, sandboxConfig, {
        runtime,
        clock: this.deps.clock,
        podDir: podDir(node.rootDir, pod.metadata.uid!),
        networkError: this.deps.networkError,
        podCgroups: this.deps.podCgroups,
        runtimeHandler: this.deps.runtimeHandler,
        userNamespaceRefusal: this.deps.userNamespaceRefusal,
        userNamespace: this.deps.userNamespace,
        events: this.deps.events,
      });
      results.push(created);
      // Upstream's SyncPod stops before the sandbox on a network that is not ready: no start tried.
      if (created.reason !== 'NetworkNotReady') this.deps.counters?.pod(created.ok, userNamespaced);
      if (!created.ok) return results;
      sandboxId = created.target;
      if (!pod.spec.hostNetwork) podIPs = podIPsOf(pod, created.sandbox, node.nodeIP);
      const sandbox = created.sandbox;
      if (sandbox && onSandboxCreated)
        beforePull = () => {
          beforePull = undefined;
          onSandboxCreated(sandbox);
        };
    }
    // Containers still in their restart backoff are reported as waiting (CrashLoopBackOff), not started.
    backoffResults(pod, plan, results, this.deps.events);
    if (!plan.start.length) return results;
    // Independent, so at once: each waits on the disk or the apiserver while many pods start.
    let objects: (PodObjects & { pullSecrets: PullSecret[] }) | undefined;
    let objectsError: string | undefined;
    const [hostsFile] = await Promise.all([
      podIPs.length ? writeHostsFile(pod, podIPs, node) : undefined,
      (async () => {
        try {
          objects = await this.deps.objects?.forPod(pod);
        } catch (err) {
          objectsError = messageOf(err);
        }
      })(),
    ]);
    // Upstream getImageVolumes: the images of the pod's image volumes, before any container is tried.
    let podVolumes = volumes;
    if (!objectsError && imageVolumesOf(pod).length) {
      const pulled = await this.pullImageVolumes(pod, sandboxConfig, objects, onPull);
      if (!pulled.ok) {
        results.push(pulled.failure);
        return results;
      }
      podVolumes = new Map([...(volumes ?? []), ...pulled.volumes]);
    }
    for (const s of plan.start) {
      const spec = specOf(pod, s.name, s.init);
      if (!spec) continue;
      const r = objectsError
        ? {
            action: 'StartContainer' as const,
            target: s.name,
            init: s.init,
            ok: false,
            reason: 'CreateContainerConfigError',
            message: objectsError,
            retryAfterMs: 10_000,
          }
        : await this.startContainer(pod, spec, s, {
            sandboxId,
            sandboxConfig,
            podIPs,
            hostsFile,
            objects,
            volumes: podVolumes,
            status,
            onPull,
          });
      this.deps.counters?.container(
        s.init ? 'init_container' : s.ephemeral ? 'ephemeral_container' : 'container',
        r.ok ? undefined : r.reason,
      );
      if (r.ok && s.init && spec.restartPolicy !== 'Always')
        this.deps.initContainerTimes?.started(pod.metadata.uid!, this.deps.clock.now());
      if (!r.ok && r.reason !== 'ErrImagePull' && r.reason !== 'ImagePullBackOff' && r.reason !== 'ErrImageNeverPull') {
        this.deps.events?.record(
          podRef(pod, { name: s.name, init: s.init }),
          'Warning',
          'Failed',
          r.reason === 'CreateContainerConfigError' ? `Error: ${r.message}` : `Error: ${r.reason}: ${r.message}`,
        );
      }
      results.push(r);
    }
    return results;
  }

  /** The init containers (not sidecars) the runtime shows finished, when each exited (the pod startup SLI's). */
  private reportFinishedInitContainers(pod: Pod, status: PodRuntimeStatus): void {
    const times = this.deps.initContainerTimes;
    if (!times) return;
    for (const c of pod.spec.initContainers ?? []) {
      if (c.restartPolicy === 'Always') continue;
      const latest = latestContainer(status, c.name);
      if (latest?.state === 'exited' && latest.exitCode === 0 && latest.finishedAt > 0)
        times.finished(pod.metadata.uid!, latest.finishedAt);
    }
  }

  /** The credentials to try for `image`: the pod's pull secrets, then the node's credential providers. */
  private async pullCredentials(
    image: string,
    pod: Pod,
    objects: (PodObjects & { pullSecrets: PullSecret[] }) | undefined,
  ): Promise<AuthConfig[]> {
    return [
      ...(objects ? credentialsFor(image, objects.pullSecrets) : []),
      ...((await this.deps.nodeCredentials?.(image, pod)) ?? []),
    ];
  }

  /**
   * Pulls the image of each image volume of `pod` as its pull policy says, with the pod's pull secrets and the node's
   * credentials; the image's events name the pod (upstream's objectRef). The volumes as containers mount them, or the
   * first failure: the sync ends there and no container is tried, as upstream's.
   */
  private async pullImageVolumes(
    pod: Pod,
    sandboxConfig: cri.PodSandboxConfig,
    objects: (PodObjects & { pullSecrets: PullSecret[] }) | undefined,
    onPull: () => void,
  ): Promise<{ ok: true; volumes: Map<string, MountedVolume> } | { ok: false; failure: StepResult }> {
    const volumes = new Map<string, MountedVolume>();
    const handler = (await this.deps.runtimeHandler?.(pod)) ?? '';
    for (const v of imageVolumesOf(pod)) {
      const reference = v.image.reference ?? '';
      const r = await this.deps.images.ensureImageExists(
        pod,
        { name: v.name, image: reference, imagePullPolicy: v.image.pullPolicy } as Container,
        {
          sandboxConfig,
          auth: () => this.pullCredentials(reference, pod, objects),
          objectRef: podRef(pod),
          onPull,
        },
      );
      if (!r.ok)
        return {
          ok: false,
          failure: {
            action: 'PullImageVolume',
            target: v.name,
            ok: false,
            reason: r.reason,
            message: r.message,
            retryAfterMs: r.retryAfterMs ?? SYNC_ERROR_BACKOFF_MS,
          },
        };
      volumes.set(v.name, {
        path: '',
        readOnly: true,
        plugin: 'kubernetes.io~image',
        image: {
          image: r.imageRef,
          user_specified_image: reference,
          runtime_handler: handler,
          ...(pod.metadata.annotations ? { annotations: pod.metadata.annotations } : {}),
        },
      });
    }
    return { ok: true, volumes };
  }

  /**
   * The container's legacy log link (upstream: after StartContainer, before postStart); a failure is logged, not fatal.
   */
  private async linkLog(pod: Pod, name: string, id: string, logPath: string): Promise<void> {
    const link = legacyLogSymlink(
      this.deps.node.containerLogsDir!,
      id,
      name,
      pod.metadata.name!,
      pod.metadata.namespace!,
    );
    await linkContainerLog(link, logPath).catch((err: unknown) =>
      this.deps.logger?.warn(
        { path: link, containerID: id, containerLogPath: logPath, err: messageOf(err) },
        'Failed to create legacy symbolic link',
      ),
    );
  }

  private async startContainer(
    pod: Pod,
    c: Container,
    s: PodActions['start'][number],
    o: {
      sandboxId: string;
      sandboxConfig: cri.PodSandboxConfig;
      /** The pod's IPs, the primary first (pod-ips.ts). */
      podIPs: string[];
      hostsFile?: string;
      objects?: PodObjects & { pullSecrets: PullSecret[] };
      volumes?: ReadonlyMap<string, MountedVolume>;
      status?: PodRuntimeStatus;
      /** Called before the image is pulled, when it is. */
      onPull?: () => void;
    },
  ): Promise<StepResult> {
    const { node } = this.deps;
    const base = { action: 'StartContainer' as const, target: c.name, init: s.init };
    const ref = podRef(pod, { name: c.name, init: s.init });
    // A container that cannot be made or started: its reason, the runtime's own words, and upstream's Warning "Failed"
    // event.
    const failed = (reason: string, err: unknown, retryAfterMs?: number): StepResult => {
      const message = typeof err === 'string' ? err : runtimeDetails(err);
      this.deps.events?.record(ref, 'Warning', 'Failed', `Error: ${message}`);
      return { ...base, ok: false, reason, message, ...(retryAfterMs ? { retryAfterMs } : {}) };
    };
    // The image, and alongside it what does not depend on it: the restart count (count 0 is
    // computePodActions' answer when the runtime has no instance of it: the count goes on from its
    // logs, a runtime whose state was wiped) and the termination-log file (upstream makes it after
    // the image; here it is removed again when the image fails). Each waits on the disk or the
    // runtime while many pods start.
    const termLog = terminationLogFile(node.rootDir, pod, c).then(
      (file) => ({ file }),
      (err: unknown) => ({ file: undefined, err }),
    );
    const [img, restartCount, log] = await Promise.all([
      this.deps.images.ensureImageExists(pod, c, {
        sandboxConfig: o.sandboxConfig,
        auth: () => this.pullCredentials(c.image ?? '', pod, o.objects),
        init: s.init,
        onPull: o.onPull,
      }),
      s.restartCount === 0 ? restartCountFromLogs(join(o.sandboxConfig.log_directory ?? '', c.name)) : s.restartCount,
      termLog,
    ]);
    if (!img.ok) {
      if (log.file) await rm(log.file, { force: true }).catch(() => {});
      return { ...base, ok: false, reason: img.reason, message: img.message, retryAfterMs: img.retryAfterMs };
    }
    let config: cri.ContainerConfig;
    let cpuset: string | undefined;
    let sandboxConfig = o.sandboxConfig;
    try {
      if ('err' in log) throw log.err;
      // The pod's own user namespace, as its sandbox was made with it (upstream asks for the mappings again).
      const userNamespace =
        node.userNamespacesSupport && pod.spec.hostUsers === false ? this.deps.userNamespace?.(pod) : undefined;
      if (userNamespace) sandboxConfig = withUserNamespace(sandboxConfig, userNamespace);
      const envFiles = await readEnvFiles(c, o.volumes);
      const built = generateContainerConfig(pod, c, restartCount, img.imageRef, {
        envFiles,
        podIPs: o.podIPs,
        hostIPs: [node.nodeIP],
        nodeName: node.nodeName,
        hostsFile: o.hostsFile,
        terminationLogFile: log.file,
        resources: node.resources,
        image: img.image,
        objects: o.objects,
        volumes: o.volumes,
        handlerSupportsRRO: this.deps.supportsRecursiveReadOnly?.(pod) ?? false,
        nodeAllocatable: this.deps.nodeAllocatable?.(),
        security: node.security,
        userNamespacesSupport: node.userNamespacesSupport,
        userNamespace,
        containerStopSignals: node.containerStopSignals,
      });
      if (!built.ok) return failed('CreateContainerConfigError', built.message, 10_000);
      // An ephemeral container with a target joins the target's process namespace (CRI NamespaceMode TARGET).
      const target = (c as EphemeralContainer).targetContainerName;
      const targetId = target
        ? o.status?.containers.find((x) => x.name === target && x.state === 'running')?.id
        : undefined;
      if (s.ephemeral && targetId && built.config.linux?.security_context?.namespace_options)
        Object.assign(built.config.linux.security_context.namespace_options, { pid: 'TARGET', target_id: targetId });
      const sub = await prepareSubPaths(built.volumeMounts, c.name);
      if (!sub.ok) return failed('CreateContainerConfigError', sub.message, 10_000);
      config = { ...built.config, mounts: [...sub.mounts, ...(built.config.mounts ?? []).slice(sub.mounts.length)] };
      // The device plugins' answers for the container's devices (upstream GetDeviceRunContainerOptions).
      const devices = (await this.deps.devices?.containerDevices(pod, c)) ?? [];
      // The CDI devices of the ResourceClaims the container uses (DRA).
      const claimed = this.deps.dra?.cdiDevices(pod, c) ?? [];
      if (claimed.length)
        devices.push({
          cdi_devices: claimed.map((name) => ({ name })),
          // For runtimes that read CDI devices from annotations only, as upstream sets them.
          annotations: this.deps.dra?.cdiAnnotations(pod, c),
        });
      if (devices.length) config = withDevices(config, devices);
      // The CPU manager's cpuset (upstream PreCreateContainer): the container's exclusive CPUs, or the shared pool.
      cpuset = this.deps.cpusets?.cpusetFor(pod.metadata.uid!, c.name);
      if (cpuset && config.linux?.resources) config.linux.resources.cpuset_cpus = cpuset;
      // The memory manager's NUMA nodes (upstream PreCreateContainer's GetMemoryNUMANodes).
      const mems = this.deps.cpusetMems?.(pod.metadata.uid!, c.name);
      if (mems && config.linux?.resources) config.linux.resources.cpuset_mems = mems;
    } catch (err) {
      return failed('CreateContainerConfigError', messageOf(err), 10_000);
    }
    if (s.backoff) this.deps.backoff.next(s.backoff.key, s.backoff.eventMs, this.deps.clock.now());
    let id: string;
    // Upstream's image volume counters: each image volume mount asked for, then made or not with the container.
    const imageMounts = (config.mounts ?? []).filter((m) => m.image).length;
    if (imageMounts) this.deps.imageVolumeCounters?.requested(imageMounts);
    try {
      id = await this.deps.runtime.createContainer(o.sandboxId, config, sandboxConfig);
    } catch (err) {
      if (imageMounts) this.deps.imageVolumeCounters?.mounted(imageMounts, false);
      return failed('CreateContainerError', err);
    }
    if (imageMounts) this.deps.imageVolumeCounters?.mounted(imageMounts, true);
    if (cpuset) this.deps.cpusets?.created(pod.metadata.uid!, c.name, id, cpuset);
    this.deps.events?.record(ref, 'Normal', 'Created', `Created container: ${c.name}`);
    try {
      await this.deps.runtime.startContainer(id);
    } catch (err) {
      return failed('RunContainerError', err);
    }
    this.deps.events?.record(ref, 'Normal', 'Started', `Started container ${c.name}`);
    if (node.containerLogsDir)
      await this.linkLog(pod, c.name, id, join(o.sandboxConfig.log_directory ?? '', config.log_path ?? ''));
    // postStart: the container is not started until the hook returns; a failure kills it.
    const hookError = await runHook('postStart', pod, c, {
      runtime: this.deps.runtime,
      containerId: id,
      podIP: o.podIPs[0] ?? '',
      timeoutMs: POST_START_TIMEOUT_MS,
      events: this.deps.events,
      counters: this.deps.hookCounters,
    });
    if (hookError) {
      this.deps.events?.record(ref, 'Warning', 'FailedPostStartHook', hookError);
      // Upstream's killContainer with the message "FailedPostStartHook": its Killing event says so, and the
      // container's preStop hook runs within the grace period.
      this.deps.events?.record(ref, 'Normal', 'Killing', 'FailedPostStartHook');
      const grace = await preStop(pod, c, {
        runtime: this.deps.runtime,
        containerId: id,
        podIP: o.podIPs[0] ?? '',
        graceSeconds: gracePeriodOf(pod),
        events: this.deps.events,
        logger: this.deps.logger,
        counters: this.deps.hookCounters,
      }).catch(() => gracePeriodOf(pod));
      await this.deps.runtime.stopContainer(id, grace).catch(() => {});
      return { ...base, ok: false, reason: 'PostStartHookError', message: hookError };
    }
    return { ...base, ok: true, id };
  }
}
