/**
 * The work a pod worker does in each state (PodSyncer):
 * syncPod — a static pod's mirror pod is made current; the runtime status is read and the API
 *   status generated and stored; a finished (Succeeded/Failed) or deleted pod is terminal; the
 *   pod's volumes are set up (or refreshed) — until they all are, nothing is started and the sync
 *   is retried after the volume backoff (a pod whose volume cannot be attached for want of the
 *   node's attachment slots is rejected, attach-limit.ts); its ResourceClaims are prepared and an
 *   in-place resize applied; the plan is computed and applied; the waiting reasons are recorded,
 *   dead instances pruned and the status refreshed; the next sync is scheduled (backoff expiry or
 *   syncFrequency).
 * syncTerminatingPod — stop containers (grace period) and sandboxes until nothing runs; a failed
 *   stop is reported (FailedKillPod) and the step retried by the pod worker; then the pod's
 *   dynamic resources are unprepared, before its status says it stopped.
 * syncTerminatedPod — for a pod no longer desired, remove its containers, sandboxes and logs,
 *   then its volumes and pod directory; for a pod still desired (deleted in the API but held by a
 *   finalizer, or finished), unmount its volumes, remove its cgroup, then store its final status
 *   (Succeeded or Failed, upstream TerminatePod) — the status the apiserver gets before the DELETE.
 */
import type { AllocationManager } from '../allocation/allocation-manager.js';
import type { DeviceManager } from '../devices/device-manager.js';
import { messageOf } from '../../lib/errors.js';
import type { DraManager } from '../dra/dra-manager.js';
import { isTerminalPhase, type Container, type Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { deadContainersToRemove } from '../gc/container-gc.js';
import { computePodActions } from '../runtime/compute-pod-actions.js';
import type { PodActionExecutor } from '../runtime/executor.js';
import type { ImageManager } from '../images/image-manager.js';
import { removePodCgroup, type PodCgroupNaming } from '../gc/pod-cgroups.js';
import type { CgroupOpObserver } from '../cgroups/pod-cgroup-manager.js';
import { killFailure, killPod } from '../runtime/kill-pod.js';
import type { HookCounters } from '../runtime/lifecycle-hooks.js';
import type { PodRuntimeStatus, RuntimeSandbox } from '../runtime/pod-runtime-status.js';
import type { StepResult } from '../runtime/step-result.js';
import { PodStatusError, type RuntimeManager } from '../runtime/runtime-manager.js';
import { goStatusText } from '../../cri/grpc-errors.js';
import { podLogDir } from '../runtime/sandbox-config.js';
import { removePodFromRuntime } from '../runtime/remove-pod.js';
import { legacyLogSymlink, removeContainerLogs } from '../runtime/logs/legacy-log-links.js';
import { terminatePodStatus } from '../status/terminate-pod.js';
import { withVerdict, type Verdict } from '../status/verdict.js';
import { generatePodStatus } from '../status/generate-pod-status.js';
import type { ReasonCache } from '../status/reason-cache.js';
import type { StatusManager } from '../status/status-manager.js';
import type { BackoffTable } from './backoff.js';
import type { PodSyncer } from './pod-workers.js';
import type { WorkQueue } from './work-queue.js';
import type { EventSink } from '../events/recorder.js';
import { isStaticPod } from '../podconfig/types.js';
import { podRef } from '../events/recorder.js';
import type { VolumeManager } from '../volume/volume-manager.js';
import type { ProberManager } from '../prober/prober-manager.js';
import type { PodManager } from '../pods/pod-manager.js';
import type { PodObjectFetcher } from '../objects/pod-objects.js';
import { VOLUME_ATTACHMENT_LIMIT_EXCEEDED } from '../volume/attach-limit.js';
import { newContainerTerminations, type ContainerTermination } from '../status/container-terminations.js';

/** What the syncer needs. */
export interface PodSyncDeps {
  runtime: RuntimeService;
  runtimeManager: RuntimeManager;
  executor: PodActionExecutor;
  statusManager: StatusManager;
  reasons: ReasonCache;
  backoff: BackoffTable;
  workQueue: WorkQueue;
  clock: Clock;
  logger: Logger;
  nodeIP: string;
  runtimeName: string;
  podLogsDir: string;
  /** Where the legacy container log links are (absent: none are made). */
  containerLogsDir?: string;
  syncFrequencyMs: number;
  rootDir: string;
  /** /sys/fs/cgroup, or "" when the runtime makes no pod cgroups. */
  cgroupFsRoot: string;
  /** Times the pod cgroup's removal (kubelet_cgroup_manager_duration_seconds). */
  observeCgroup?: CgroupOpObserver;
  /** How pod cgroups are named (root, driver) and systemd's manager for the systemd driver's slices. */
  cgroupNaming: PodCgroupNaming;
  images: ImageManager;
  /** The desired pods (a pod not among them is released for good) and the statuses the apiserver has. */
  pods: Pick<PodManager, 'getPodByUid' | 'apiStatusOf'>;
  events?: EventSink;
  /** Upstream's hook counters (an HTTPS preStop hook answered in HTTP, a sleep cut off). */
  hookCounters?: HookCounters;
  /** Mirror pods for static pods (absent without an apiserver). */
  mirrors?: { ensure(pod: Pod): Promise<void> };
  /** The volume manager's pod-facing half. */
  volumes: Pick<VolumeManager, 'mountPod' | 'unmountPod' | 'removePodDir'>;
  /** Told of each container termination a new status shows (kubelet_terminated_containers_total). */
  onContainerTerminated?(termination: ContainerTermination): void;
  /**
   * Told how long the status read right after a sync whose every step succeeded took: upstream's on-demand
   * single-pod PLEG relist (kubelet_pleg_pod_relist_duration_seconds), given only with the PLEGOnDemandRelist gate.
   */
  observePodRelist?(seconds: number): void;
  /** Told the reason of each pod the sync rejects (kubelet_admission_rejections_total). */
  onRejected?(reason: string): void;
  /** The ConfigMap and Secret managers: they keep what a syncing pod names until it has terminated. */
  objects?: Pick<PodObjectFetcher, 'registerPod' | 'unregisterPod'>;
  /** The prober manager (workers per container and probe kind). */
  prober?: Pick<ProberManager, 'syncPod' | 'removePod' | 'results' | 'onResult'>;
  /** Whether the pod's runtime handler makes recursive read-only mounts (its status's volumeMounts). */
  supportsRecursiveReadOnly?(pod: Pod): boolean;
  /** The ContainerStopSignals gate (the statuses' stopSignal). */
  containerStopSignals?: boolean;
  /**
   * The DRA manager: a pod's ResourceClaims are prepared before its containers start and unprepared when it is gone.
   */
  dra?: Pick<DraManager, 'prepare' | 'unprepare' | 'resourceStatuses'>;
  /** The device manager: a pod that is gone frees its devices. */
  devices?: Pick<DeviceManager, 'release' | 'devicesOf'>;
  /** Allocations and in-place resize (absent: containers take their spec's resources, no resize). */
  allocation?: Pick<
    AllocationManager,
    'sync' | 'effective' | 'remove' | 'stateOf' | 'allocatedResources' | 'actuatedResources'
  >;
}

/**
 * How soon a Deferred resize or one not yet applied is tried again (upstream retries pending resizes as resources free
 * up).
 */
const RESIZE_RETRY_MS = 5000;
/** How soon a pod whose claims could not be prepared is tried again. */
const DRA_RETRY_MS = 5000;

/** Upstream activeDeadlineHandler: when the pod's active deadline passes (ms), or undefined. Pure. */
export function activeDeadlineMs(pod: Pod, startTime: string | undefined): number | undefined {
  const ads = pod.spec.activeDeadlineSeconds;
  if (ads === undefined || ads === null || !startTime) return undefined;
  return Date.parse(startTime) + ads * 1000;
}

/**
 * What a sync created when the pod had nothing in the runtime (`before`) and every step in
 * `results` succeeded with a sandbox among them: that sandbox and the started containers' IDs,
 * which are then all the runtime has of the pod. Undefined otherwise (a failed step may leave a
 * container behind). Pure.
 */
export function createdByOneSync(
  before: PodRuntimeStatus,
  results: StepResult[],
): { sandbox: RuntimeSandbox; containerIds: string[] } | undefined {
  if (before.sandboxes.length || before.containers.length || !results.every((r) => r.ok)) return undefined;
  const [first, ...rest] = results;
  const containerIds = rest.flatMap((r) => (r.action === 'StartContainer' && r.id ? [r.id] : []));
  if (first?.action !== 'CreatePodSandbox' || !first.sandbox || containerIds.length !== rest.length) return undefined;
  return { sandbox: first.sandbox, containerIds };
}

/** The IDs of the containers of `rs` still running. Pure. */
function stillRunning(rs: PodRuntimeStatus): string[] {
  return rs.containers.filter((c) => c.state === 'running').map((c) => c.id);
}

/** PodSyncer over the runtime manager. */
export class PodSync implements PodSyncer {
  /** Terminal verdicts the kubelet reached itself (DeadlineExceeded), kept through termination. */
  private readonly verdicts = new Map<string, Verdict>();
  /** The runtime status a terminating step ended with, for the terminated step right after it. */
  private readonly stopped = new Map<string, PodRuntimeStatus>();
  /** The pods being stopped, with the runtime status they had: their readiness still counts. */
  private readonly stopping = new Map<string, { pod: Pod; rs: PodRuntimeStatus }>();

  constructor(private readonly deps: PodSyncDeps) {
    // While a pod stops, its worker waits on the kill; a readiness change reaches its status here
    // (upstream's status manager SetContainerReadiness): a pod going away turns unready at once.
    deps.prober?.onResult((uid) => {
      const s = this.stopping.get(uid);
      if (s) this.publish(s.pod, s.rs, 'stopping');
    });
  }

  /**
   * The pod's runtime status: read now, or (`quiet`) from the PLEG's lists when they began after the pod's quiet time.
   */
  private status(pod: Pod, quiet?: { quietSinceMs: number }) {
    return this.deps.runtimeManager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!, quiet);
  }

  /**
   * The status a step begins with (upstream's pod worker reads it before each step): a pod whose
   * status the runtime fails to give gets upstream's FailedSync event, and the step fails.
   */
  private async statusForStep(pod: Pod, quiet?: { quietSinceMs: number }): Promise<PodRuntimeStatus> {
    try {
      return await this.status(pod, quiet);
    } catch (err) {
      if (err instanceof PodStatusError)
        this.deps.events?.record(
          podRef(pod),
          'Warning',
          'FailedSync',
          `error determining status: ${goStatusText(err.runtimeError)}`,
        );
      throw err;
    }
  }

  /**
   * The pod's runtime status after the executor's `results` on `before`: read by ID when the pod
   * had nothing in the runtime and every step succeeded, creating a sandbox (createdByOneSync),
   * otherwise by a full read.
   */
  private statusAfter(pod: Pod, before: PodRuntimeStatus, results: StepResult[]) {
    const created = createdByOneSync(before, results);
    if (!created) return this.status(pod);
    return this.deps.runtimeManager.getCreatedPodStatus(
      pod.metadata.uid!,
      pod.metadata.name!,
      pod.metadata.namespace!,
      created.sandbox,
      created.containerIds,
    );
  }

  /**
   * Makes the pod's status Failed with the verdict's reason and message from now until it is gone
   * (the kubelet kills it: eviction, preemption), with upstream's DisruptionTarget condition
   * (reason TerminationByKubelet) saying why.
   */
  disrupted(uid: string, verdict: Required<Verdict>): void {
    this.verdicts.set(uid, verdict);
  }

  /** A container's legacy log link (undefined without a links dir). */
  private linkOf(pod: Pod, c: { id: string; name: string }): string | undefined {
    const dir = this.deps.containerLogsDir;
    return dir ? legacyLogSymlink(dir, c.id, c.name, pod.metadata.name!, pod.metadata.namespace!) : undefined;
  }

  /**
   * Generates and stores the pod's status; `final`: the status after its release (upstream
   * TerminatePod); `stopping`: while its containers stop; `sandbox`: its new sandbox made, before its
   * containers (no probe worker is started but on `sync`).
   */
  private publish(pod: Pod, rs: PodRuntimeStatus, mode: 'sync' | 'sandbox' | 'stopping' | 'final' = 'sync') {
    const final = mode === 'final';
    const uid = pod.metadata.uid!;
    const api = this.deps.pods.apiStatusOf(pod);
    // After a restart the kubelet has none yet: the apiserver's (start time, transition times, containers it lost).
    const previous = this.deps.statusManager.get(uid) ?? api;
    let st = generatePodStatus(pod, rs, {
      nowMs: this.deps.clock.now(),
      nodeIP: this.deps.nodeIP,
      runtimeName: this.deps.runtimeName,
      reasons: this.deps.reasons.snapshot(uid),
      previous,
      apiStartTime: api?.startTime,
      probes: this.deps.prober?.results(uid),
      supportsRecursiveReadOnly: this.deps.supportsRecursiveReadOnly?.(pod),
      podIsTerminal: final,
      containerStopSignals: this.deps.containerStopSignals,
      ...(this.deps.devices ? { devices: (name: string) => this.deps.devices!.devicesOf(uid, name) } : {}),
      ...(this.deps.dra ? { claimResources: (c: Container) => this.deps.dra!.resourceStatuses(pod, c) } : {}),
      ...(this.deps.allocation
        ? {
            allocation: {
              allocated: this.deps.allocation.allocatedResources(pod),
              actuated: this.deps.allocation.actuatedResources(uid),
              resize: this.deps.allocation.stateOf(uid),
            },
          }
        : {}),
    });
    if (final) st = terminatePodStatus(pod, st);
    const verdict = this.verdicts.get(uid);
    if (verdict) st = withVerdict(st, verdict, this.deps.statusManager.get(uid), this.deps.clock.now());
    if (this.deps.statusManager.set(uid, st) && this.deps.onContainerTerminated)
      for (const termination of newContainerTerminations(previous, st)) this.deps.onContainerTerminated(termination);
    if (mode === 'sync') this.deps.prober?.syncPod(pod, rs, st.podIP ?? '');
    return st;
  }

  async syncPod(pod: Pod, quiet: { quietSinceMs: number }): Promise<{ terminal: boolean }> {
    const uid = pod.metadata.uid!;
    const now = this.deps.clock.now();
    // A static pod's mirror pod first, so the API shows the pod this sync is about.
    if (this.deps.mirrors && isStaticPod(pod)) await this.deps.mirrors.ensure(pod);
    const rs = await this.statusForStep(pod, quiet);
    const st = this.publish(pod, rs);
    // A pod active longer than activeDeadlineSeconds fails, as upstream; a finished or deleted one is terminal.
    const deadline = activeDeadlineMs(pod, st.startTime);
    if (deadline !== undefined && deadline <= now && !this.verdicts.has(uid)) {
      const message = 'Pod was active on the node longer than the specified deadline';
      this.verdicts.set(uid, { reason: 'DeadlineExceeded', message });
      this.deps.events?.record(podRef(pod), 'Normal', 'DeadlineExceeded', message);
      this.publish(pod, rs);
      return { terminal: true };
    }
    if (deadline !== undefined) this.deps.workQueue.enqueue(uid, deadline);
    if (pod.metadata.deletionTimestamp || isTerminalPhase(st.phase)) return { terminal: true };
    // The ConfigMaps and Secrets it names are kept for its volumes and containers (upstream RegisterPod).
    this.deps.objects?.registerPod(pod);
    // Nothing starts until every volume is set up.
    const mounted = await this.deps.volumes.mountPod(pod);
    if (!mounted.ok && mounted.attachLimitExceeded) {
      // Upstream rejectPod: Failed, its reason and message, a Warning event, kubelet_admission_rejections_total.
      this.verdicts.set(uid, {
        reason: VOLUME_ATTACHMENT_LIMIT_EXCEEDED,
        message: `Pod was rejected: ${mounted.attachLimitExceeded}`,
      });
      this.deps.events?.record(podRef(pod), 'Warning', VOLUME_ATTACHMENT_LIMIT_EXCEEDED, mounted.attachLimitExceeded);
      this.deps.onRejected?.(VOLUME_ATTACHMENT_LIMIT_EXCEEDED);
      this.publish(pod, rs);
      return { terminal: true };
    }
    if (!mounted.ok) {
      if (mounted.report) {
        this.deps.events?.record(podRef(pod), 'Warning', 'FailedMount', mounted.report);
        this.deps.logger.error(
          { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, err: mounted.report },
          'Unable to attach or mount volumes for pod; skipping pod',
        );
      }
      this.deps.workQueue.enqueue(uid, now + Math.max(mounted.retryAfterMs, 100));
      return { terminal: false };
    }
    // Its ResourceClaims prepared by their DRA drivers (upstream PrepareDynamicResources).
    if (this.deps.dra) {
      try {
        await this.deps.dra.prepare(pod);
      } catch (err) {
        const message = `Failed to prepare dynamic resources: ${messageOf(err)}`;
        this.deps.events?.record(podRef(pod), 'Warning', 'FailedPrepareDynamicResources', message);
        this.deps.workQueue.enqueue(uid, now + DRA_RETRY_MS);
        return { terminal: false };
      }
    }
    // An in-place resize: the changed spec admitted (or Deferred, Infeasible), the allocation applied to what runs.
    if (this.deps.allocation) {
      const resize = await this.deps.allocation.sync(pod, rs);
      // The status says at once what the resize pass changed (allocated, applied, pending).
      if (resize.changed) this.publish(pod, rs);
      if (resize.state.pending?.reason === 'Deferred' || resize.state.inProgress)
        this.deps.workQueue.enqueue(uid, now + RESIZE_RETRY_MS);
    }
    // Containers are made with their allocated resources, which a Deferred resize has not changed yet.
    const effective = this.deps.allocation?.effective(pod) ?? pod;
    const plan = computePodActions(effective, rs, {
      nowMs: now,
      backoff: this.deps.backoff.snapshot(),
      probes: this.deps.prober?.results(uid),
    });
    // A new sandbox is in the status before the first image pull that follows it: PodReadyToStartContainers is True
    // while the pull runs (upstream v1.36, kubernetes/kubernetes#134660). A sync that pulls nothing reports it at its
    // end, moments later: a status in between would only cost every pod start a generation and a write.
    const results = await this.deps.executor.apply(effective, rs, plan, mounted.volumes, (sandbox) =>
      this.publish(pod, { ...rs, sandboxes: [sandbox, ...rs.sandboxes] }, 'sandbox'),
    );
    // Waiting reasons (ErrImagePull, CrashLoopBackOff…) are what the next status shows of the failed steps.
    this.deps.reasons.update(uid, results);
    for (const r of results.filter((x) => !x.ok && x.reason !== 'CrashLoopBackOff')) {
      this.deps.logger.warn(
        { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, action: r.action, target: r.target, reason: r.reason },
        r.message ?? 'step failed',
      );
    }
    // After changes, a fresh status: dead instances beyond the ones kept are pruned before it is published.
    if (results.length) {
      const readStartMs = this.deps.clock.monotonic();
      let fresh = await this.statusAfter(pod, rs, results);
      if (results.every((r) => r.ok)) this.deps.observePodRelist?.((this.deps.clock.monotonic() - readStartMs) / 1000);
      const dead = deadContainersToRemove(fresh);
      for (const c of dead) {
        await this.deps.runtime.removeContainer(c.id).catch(() => {});
        await removeContainerLogs({ logPath: c.logPath, link: this.linkOf(pod, c) });
      }
      if (dead.length) fresh = await this.status(pod);
      const after = this.publish(pod, fresh);
      if (plan.failed || isTerminalPhase(after.phase)) return { terminal: true };
    }
    // The next sync: when the earliest backoff expires, else after syncFrequency.
    const retry = results.map((r) => r.retryAfterMs).filter((x): x is number => x !== undefined);
    const delay = retry.length ? Math.min(...retry) + 50 : this.deps.syncFrequencyMs;
    this.deps.workQueue.enqueue(uid, now + delay);
    return { terminal: false };
  }

  async syncTerminatingPod(pod: Pod, gracePeriodSeconds?: number): Promise<void> {
    const uid = pod.metadata.uid!;
    // Liveness and startup probes stop now, readiness once the containers have stopped (as upstream).
    this.deps.prober?.removePod(uid, ['liveness', 'startup']);
    const before = await this.statusForStep(pod);
    this.stopping.set(uid, { pod, rs: before });
    let rs;
    try {
      rs = await this.stopAll(pod, gracePeriodSeconds, before);
    } finally {
      this.stopping.delete(uid);
    }
    this.deps.prober?.removePod(uid);
    // Its claims go once its containers have stopped and before its status says so (upstream): the claim
    // controller deallocates a claim when it sees the pod finished. A failure fails the step, retried.
    await this.deps.dra?.unprepare(uid);
    this.publish(pod, rs, 'stopping');
    // The terminated step, which follows in the same worker, removes exactly what this saw stopped.
    this.stopped.set(uid, rs);
  }

  /**
   * Stops every container and sandbox of the pod (grace period); the runtime status after. A step
   * that fails is reported as upstream's SyncTerminatingPod reports it (a FailedKillPod event) and
   * thrown: the pod worker tries the whole step again after its backoff, and nothing of the pod is
   * released (volumes, cgroup, the API object) while something of it may still run. A kill that
   * succeeded but left a container running is tried again at once, up to three times in all.
   */
  private async stopAll(pod: Pod, gracePeriodSeconds?: number, current?: PodRuntimeStatus): Promise<PodRuntimeStatus> {
    let rs = current ?? (await this.statusForStep(pod));
    for (let attempt = 1; stillRunning(rs).length || rs.sandboxes.some((s) => s.ready); attempt++) {
      if (attempt > 3) {
        const running = stillRunning(rs).map((id) => `${this.deps.runtimeName}://${id}`);
        throw new Error(
          `detected running containers after a successful KillPod, CRI violation: [${running.join(' ')}]`,
        );
      }
      const failure = killFailure(
        await killPod(this.deps.runtime, pod, {
          status: rs,
          graceOverride: gracePeriodSeconds,
          events: this.deps.events,
          logger: this.deps.logger,
          counters: this.deps.hookCounters,
        }),
      );
      if (failure) {
        this.deps.events?.record(podRef(pod), 'Warning', 'FailedKillPod', `error killing pod: ${failure}`);
        throw new Error(failure);
      }
      rs = await this.status(pod);
    }
    return rs;
  }

  async syncTerminatedPod(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid!;
    const seen = this.stopped.get(uid);
    this.stopped.delete(uid);
    if (this.deps.pods.getPodByUid(uid)) {
      // Still in its source (deleted in the API with finalizers left, or finished): its volumes and
      // cgroup go now and its final status after them; its containers stay (logs) until it is removed.
      // A pod that came terminal from the apiserver (a kubelet restart) had no terminating step:
      // whatever of it still runs is stopped first.
      const rs = seen ?? (await this.stopAll(pod));
      if (!(await this.deps.volumes.unmountPod(uid))) throw new Error('a volume of the pod could not be unmounted');
      this.deps.objects?.unregisterPod(uid);
      if (this.deps.cgroupFsRoot)
        await removePodCgroup(this.deps.cgroupFsRoot, uid, this.deps.cgroupNaming, this.deps.observeCgroup);
      this.publish(pod, rs, 'final');
      return;
    }
    await removePodFromRuntime(this.deps.runtime, seen ?? (await this.statusForStep(pod)), {
      podLogDir: podLogDir(this.deps.podLogsDir, pod),
      containerLogsDir: this.deps.containerLogsDir,
    });
    await this.deps.volumes.removePodDir(uid);
    this.deps.objects?.unregisterPod(uid);
    this.deps.prober?.removePod(uid);
    await this.deps.allocation?.remove(uid);
    this.deps.devices?.release(uid);
    await this.deps.dra?.unprepare(uid);
    this.verdicts.delete(uid);
    if (this.deps.cgroupFsRoot)
      await removePodCgroup(this.deps.cgroupFsRoot, uid, this.deps.cgroupNaming, this.deps.observeCgroup);
    this.deps.images.forgetPod(uid);
    this.deps.reasons.remove(uid);
    this.deps.statusManager.remove(uid);
    this.deps.backoff.forgetPod(uid);
    this.deps.workQueue.remove(uid);
  }
}
