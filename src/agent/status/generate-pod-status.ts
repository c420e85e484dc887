/**
 * The API PodStatus from the runtime's view (upstream generateAPIPodStatus, getPhase,
 * convertToAPIContainerStatuses, and the status/generate.go conditions). Pure.
 */
import { podIPsOf } from '../runtime/pod-ips.js';
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
  ResourceRequirements,
} from '../../api/types.js';
import { rfc3339 } from '../../lib/time.js';
import {
  isSidecar,
  restartAllEpoch,
  shouldContainerBeRestarted,
  staleContainers,
} from '../runtime/compute-pod-actions.js';
import {
  RESTART_ALL,
  containerShouldRestart,
  matchingRestartRule,
  podUsesRestartAll,
} from '../runtime/restart-rules.js';
import {
  anyActiveRegularContainerStarted,
  anyRegularContainerCreated,
  containerInstances,
  latestContainer,
  type PodRuntimeStatus,
  type RuntimeContainer,
} from '../runtime/pod-runtime-status.js';
import type { WaitingReason } from './reason-cache.js';
import { POD_LEVEL, type ContainerResources } from '../allocation/checkpoint.js';
import { withResources } from '../allocation/resize.js';
import { podResourceLimits, podResourceRequests } from '../../api/pod-resources.js';
import type { ResizeState } from '../allocation/resize-state.js';
import { volumeMountStatuses } from '../volume/container-mounts.js';
import { isStaticPod } from '../podconfig/types.js';
import { lostInitContainerStatus, vanishedContainerStatus } from './vanished-container.js';
import { stickyPhase } from './sticky-phase.js';
import { qosClass } from './qos-class.js';

/** Inputs besides the pod and its runtime status. */
export interface PodStatusContext {
  /** The devices a container holds and their health (device manager). */
  devices?: (container: string) => { resource: string; ids: string[]; health: string[] }[];
  /** The health of the devices the container's DRA claims hold, as statuses (dra-manager.ts resourceStatuses). */
  claimResources?: (container: Container) => NonNullable<ContainerStatus['allocatedResourcesStatus']>;
  /** Allocated and applied resources by container, and where a resize stands (allocation-manager.ts). */
  allocation?: {
    allocated: ReadonlyMap<string, ContainerResources>;
    actuated?: ReadonlyMap<string, ContainerResources>;
    resize: ResizeState;
  };
  nowMs: number;
  nodeIP: string;
  runtimeName: string;
  reasons: ReadonlyMap<string, WaitingReason>;
  previous?: PodStatus;
  /** The start time the apiserver has (the pod's, a static pod's mirror's): once set it never changes. */
  apiStartTime?: string;
  /** Probe results by container name and instance id (prober-manager.ts); undefined = no such probe. */
  probes?: ProbeResults;
  /** The pod's runtime handler makes recursive read-only mounts (the statuses' volumeMounts). */
  supportsRecursiveReadOnly?: boolean;
  /** The pod is being stopped for good (deleted, evicted, finished): no container of it restarts. */
  podIsTerminal?: boolean;
  /** The ContainerStopSignals gate: each container's status names the signal the runtime stops it with. */
  containerStopSignals?: boolean;
}

/** The probe results the status reads. */
export interface ProbeResults {
  readiness(name: string, id: string): 'success' | 'failure' | 'unknown' | undefined;
  startup(name: string, id: string): 'success' | 'failure' | 'unknown' | undefined;
}

function stateOf(c: RuntimeContainer, runtimeName: string): ContainerState {
  if (c.state === 'running') return { running: { startedAt: rfc3339(c.startedAt || c.createdAt) } };
  if (c.state === 'exited') {
    return {
      terminated: {
        exitCode: c.exitCode,
        reason: c.reason || (c.exitCode === 0 ? 'Completed' : 'Error'),
        ...(c.message ? { message: c.message } : {}),
        startedAt: c.startedAt ? rfc3339(c.startedAt) : undefined,
        finishedAt: c.finishedAt ? rfc3339(c.finishedAt) : undefined,
        containerID: `${runtimeName}://${c.id}`,
      },
    };
  }
  return { waiting: { reason: 'ContainerCreating' } };
}

/**
 * The last termination of a container whose instance before `containerID` the runtime no longer has (pruned once
 * this one ended too: a finished pod's, a restart of all containers): what the previous status showed of it — its
 * state then, or the last state it already carried (upstream v1.36 keeps it, kubernetes/kubernetes#136964). Pure.
 */
export function carriedLastState(
  old: ContainerStatus | undefined,
  containerID: string | undefined,
): ContainerStatus['lastState'] | undefined {
  if (!old || !containerID) return undefined;
  if (old.containerID !== containerID && old.state?.terminated) return { terminated: old.state.terminated };
  // The same instance's, or a waiting one's (the container a restart of all containers stopped): what it carried.
  return old.lastState?.terminated ? { terminated: old.lastState.terminated } : undefined;
}

/** A container's resources as allocated: the spec's, with the allocation's requests and limits when there is one. */
function allocatedResources(spec: Container, allocation: ContainerResources | undefined): ResourceRequirements {
  const { limits, requests, ...rest } = (spec.resources ?? {}) as ResourceRequirements;
  const chosen = allocation ?? { limits, requests };
  return {
    ...rest,
    ...(chosen.limits ? { limits: { ...chosen.limits } } : {}),
    ...(chosen.requests ? { requests: { ...chosen.requests } } : {}),
  };
}

/**
 * A container's status.resources (upstream convertContainerStatusResources): its allocated resources (`{}` when none);
 * for a running one, the CPU and memory of the lists it has as applied. Pure.
 */
export function containerStatusResources(
  allocated: ResourceRequirements,
  applied: ContainerResources | undefined,
  running: boolean,
): ResourceRequirements {
  const out: ResourceRequirements = {
    ...allocated,
    ...(allocated.limits ? { limits: { ...allocated.limits } } : {}),
    ...(allocated.requests ? { requests: { ...allocated.requests } } : {}),
  };
  if (!running || !applied) return out;
  for (const kind of ['limits', 'requests'] as const)
    for (const name of ['cpu', 'memory']) {
      const value = applied[kind]?.[name];
      if (out[kind] && value !== undefined) out[kind][name] = value;
    }
  return out;
}

/**
 * The pod's status.resources when it is not running, or has no pod-level resources (upstream
 * getEffectiveAllocatedResources): its pod-level resources with the requests and limits added up. Pure.
 */
function effectivePodResources(allocatedPod: Pod, requests: Record<string, string>): ResourceRequirements {
  const {
    limits: _limits,
    requests: _requests,
    ...rest
  } = ((allocatedPod.spec as { resources?: object }).resources ?? {}) as ResourceRequirements;
  const limits = podResourceLimits(allocatedPod);
  return {
    ...rest,
    ...(Object.keys(limits).length ? { limits } : {}),
    ...(Object.keys(requests).length ? { requests: { ...requests } } : {}),
  };
}

function containerStatuses(
  pod: Pod,
  specs: Container[],
  rs: PodRuntimeStatus,
  ctx: PodStatusContext,
  defaultWaiting: string,
  init: boolean,
  previous: ContainerStatus[] | undefined,
): ContainerStatus[] {
  return specs.map((spec) => {
    const [cur, prev] = containerInstances(rs, spec.name);
    let lostInit = false;
    let st: ContainerStatus = {
      name: spec.name,
      state: { waiting: { reason: defaultWaiting } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: spec.image ?? '',
      imageID: '',
      started: false,
    };
    // ResourceHealthStatus: each allocated device's health, as its plugin or DRA driver last said.
    const held = [
      ...(ctx.devices?.(spec.name) ?? []).map((d) => ({
        name: d.resource,
        resources: d.ids.map((id, i) => ({ resourceID: id, health: d.health[i] })),
      })),
      ...(ctx.claimResources?.(spec) ?? []),
    ];
    if (held.length) st.allocatedResourcesStatus = held;
    const mounts = volumeMountStatuses(spec, ctx.supportsRecursiveReadOnly ?? false);
    if (mounts) st.volumeMounts = mounts;
    if (cur) {
      st.state = stateOf(cur, ctx.runtimeName);
      st.restartCount = cur.restartCount;
      if (cur.user) st.user = { linux: cur.user };
      if (ctx.containerStopSignals && cur.stopSignal) st.stopSignal = cur.stopSignal;
      // In-place resize, as upstream's convertContainerStatusResources: every container the runtime has shows its
      // allocation, a running one its CPU and memory as applied (its allocation until an update says otherwise).
      const allocated = allocatedResources(spec, ctx.allocation?.allocated.get(spec.name));
      if (allocated.requests && Object.keys(allocated.requests).length)
        st.allocatedResources = { ...allocated.requests };
      st.resources = containerStatusResources(
        allocated,
        ctx.allocation?.actuated?.get(spec.name) ?? ctx.allocation?.allocated.get(spec.name),
        cur.state === 'running',
      );
      st.containerID = `${ctx.runtimeName}://${cur.id}`;
      // The image as the runtime names it, as upstream's (containerd 1.x names an image by its first tag).
      if (cur.image) st.image = cur.image;
      st.imageID = cur.imageRef;
      // Started once the startup probe (if any) succeeded; ready once also the readiness probe did.
      const running = cur.state === 'running';
      const startup = spec.startupProbe ? ctx.probes?.startup(spec.name, cur.id) : 'success';
      const readiness = spec.readinessProbe ? ctx.probes?.readiness(spec.name, cur.id) : 'success';
      st.started = running && startup === 'success';
      st.ready = st.started && readiness === 'success';
      // As upstream: an init container that completed successfully is ready.
      if (init && spec.restartPolicy !== 'Always' && cur.state === 'exited' && cur.exitCode === 0) st.ready = true;
      if (prev?.state === 'exited') st.lastState = stateOf(prev, ctx.runtimeName);
      else
        st.lastState =
          carriedLastState(
            previous?.find((o) => o.name === spec.name),
            st.containerID,
          ) ?? {};
    } else {
      st = vanishedContainerStatus(
        pod,
        st,
        previous?.find((o) => o.name === spec.name),
        defaultWaiting,
      );
      lostInit =
        init &&
        !isSidecar(spec) &&
        !!st.state.waiting &&
        anyRegularContainerCreated(
          rs,
          pod.spec.containers.map((c) => c.name),
        );
      if (lostInit) st = lostInitContainerStatus(st);
    }
    const reason = ctx.reasons.get(spec.name);
    const skipInit = lostInit || (init && cur?.state === 'exited' && cur.exitCode === 0);
    if (reason && !skipInit && shouldContainerBeRestarted(pod, spec, cur)) {
      if (st.state.terminated) st.lastState = st.state;
      st.state = { waiting: { reason: reason.reason, ...(reason.message ? { message: reason.message } : {}) } };
      st.ready = false;
      st.started = false;
    }
    return st;
  });
}

/**
 * Upstream getPhase. A sidecar that runs counts as running, one not started yet keeps the pod Pending until it has
 * initialized (`podHasInitialized`: a regular container of the current sandbox started; without the runtime's view,
 * a regular container's status says it ran), and one that stopped counts as neither: a Job's pod whose sidecars still
 * run after its containers finished is Running until they stop. A terminal pod's stopped containers restart under no
 * policy: it is Succeeded or Failed — except a static pod (upstream kubernetes#116484: it may start again with the
 * same UID).
 */
export function podPhase(
  pod: Pod,
  init: ContainerStatus[],
  regular: ContainerStatus[],
  podIsTerminal = false,
  podHasInitialized?: boolean,
): PodPhase {
  let pendingInit = 0;
  let failedInit = 0;
  let failedInitForGood = 0;
  const specOf = (name: string, specs: Container[]) => specs.find((c) => c.name === name);
  // Whether the container `s` reports, stopped with `exitCode`, is started again (its policy and rules, else the
  // pod's).
  const restarts = (s: ContainerStatus, specs: Container[], exitCode: number) => {
    const spec = specOf(s.name, specs);
    if (!spec) return (pod.spec.restartPolicy ?? 'Always') !== 'Never';
    return (
      containerShouldRestart(spec, pod.spec, exitCode) || matchingRestartRule(spec, exitCode)?.action === RESTART_ALL
    );
  };
  const initialized = podHasInitialized ?? regular.some((s) => !s.state.waiting || s.lastState.terminated);
  const sidecars = new Set((pod.spec.initContainers ?? []).filter(isSidecar).map((c) => c.name));
  let pendingSidecars = 0;
  let running = 0,
    waiting = 0,
    stopped = 0,
    succeeded = 0,
    restarting = 0;
  for (const s of init) {
    if (sidecars.has(s.name)) {
      if (s.state.running) {
        if (!s.started) pendingSidecars++;
        running++;
      } else if (s.state.waiting && !s.lastState.terminated) {
        pendingSidecars++;
        waiting++;
      }
      continue;
    }
    const exitCode = s.state.terminated?.exitCode ?? (s.state.waiting ? s.lastState.terminated?.exitCode : undefined);
    if (exitCode === undefined || (exitCode === 0 && !s.state.terminated)) pendingInit++;
    else if (exitCode !== 0) {
      failedInit++;
      if (!restarts(s, pod.spec.initContainers ?? [], exitCode)) failedInitForGood++;
    }
  }
  for (const s of regular) {
    if (s.state.running) running++;
    else if (s.state.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
      if (restarts(s, pod.spec.containers, s.state.terminated.exitCode)) restarting++;
    } else if (s.state.waiting) {
      if (s.lastState.terminated) {
        stopped++;
        if (restarts(s, pod.spec.containers, s.lastState.terminated.exitCode)) restarting++;
      } else waiting++;
    }
  }
  if (failedInitForGood > 0) return 'Failed';
  if (pendingInit > 0 || failedInit > 0 || (pendingSidecars > 0 && !initialized)) return 'Pending';
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? 'Succeeded' : 'Failed';
    // A stopped container that will be started again keeps the pod Running (ContainerRestartRules).
    if (restarting > 0) return 'Running';
    return stopped === succeeded ? 'Succeeded' : 'Failed';
  }
  return 'Pending';
}

function condition(type: string, ok: boolean, ctx: PodStatusContext, reason?: string, message?: string): PodCondition {
  const status = ok ? 'True' : 'False';
  const old = ctx.previous?.conditions?.find((c) => c.type === type);
  const lastTransitionTime =
    old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : rfc3339(ctx.nowMs);
  return {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

/**
 * The AllContainersRestarting condition (upstream GenerateAllContainersRestartingCondition): False
 * for a finished pod, with why; True, with why, while the containers of the run before the
 * restart are stopped.
 */
function allContainersRestarting(pod: Pod, rs: PodRuntimeStatus, phase: string, ctx: PodStatusContext): PodCondition {
  if (phase === 'Succeeded') return condition('AllContainersRestarting', false, ctx, 'PodCompleted');
  if (phase === 'Failed') return condition('AllContainersRestarting', false, ctx, 'PodFailed');
  return staleContainers(rs, restartAllEpoch(pod, rs)).length > 0
    ? condition(
        'AllContainersRestarting',
        true,
        ctx,
        'RestartAllContainersStarted',
        'container exited with restart policy rule',
      )
    : condition('AllContainersRestarting', false, ctx);
}

/** The pod sets pod-level requests or limits of CPU or memory (upstream IsPodLevelResourcesSet, PodLevelResources). */
export function hasPodLevelResources(spec: Pod['spec']): boolean {
  const podLevel = (spec as { resources?: Container['resources'] }).resources;
  return !!(podLevel?.requests?.cpu || podLevel?.requests?.memory || podLevel?.limits?.cpu || podLevel?.limits?.memory);
}

/** Generates the pod's status. */
export function generatePodStatus(pod: Pod, rs: PodRuntimeStatus, ctx: PodStatusContext): PodStatus {
  const initSpecs = pod.spec.initContainers ?? [];
  const init = containerStatuses(pod, initSpecs, rs, ctx, 'PodInitializing', true, ctx.previous?.initContainerStatuses);
  const initComplete = (c: Container) => {
    if (isSidecar(c)) return !!init.find((s) => s.name === c.name)?.started;
    const i = latestContainer(rs, c.name);
    return i?.state === 'exited' && i.exitCode === 0;
  };
  const initDone = initSpecs.every(initComplete) || pod.spec.containers.some((c) => latestContainer(rs, c.name));
  const regular = containerStatuses(
    pod,
    pod.spec.containers,
    rs,
    ctx,
    initSpecs.length && !initDone ? 'PodInitializing' : 'ContainerCreating',
    false,
    ctx.previous?.containerStatuses,
  );
  const regularNames = pod.spec.containers.map((c) => c.name);
  const regularStarted = anyActiveRegularContainerStarted(rs, regularNames);
  const kept = stickyPhase(pod, podPhase(pod, init, regular, ctx.podIsTerminal, regularStarted), ctx.previous);
  const phase = kept.phase!;
  const sandbox = rs.sandboxes[0];
  // A sandbox that stopped (a finished pod) or is gone keeps the IPs it had, as the Go kubelet does.
  const sandboxIPs = podIPsOf(pod, sandbox, ctx.nodeIP);
  const podIPs = sandboxIPs.length ? sandboxIPs : (ctx.previous?.podIPs ?? []).map((entry) => entry.ip);
  const podIP = podIPs[0] ?? '';
  const incompleteInit = initSpecs.filter((c) => !initComplete(c)).map((c) => c.name);
  // Sidecars' readiness counts toward the pod's, as upstream.
  const sidecarNames = new Set(initSpecs.filter(isSidecar).map((c) => c.name));
  const unready = [...init.filter((s) => sidecarNames.has(s.name)), ...regular]
    .filter((s) => !s.ready)
    .map((s) => s.name);
  const completed = phase === 'Succeeded';
  const initialized = incompleteInit.length === 0 || initDone || completed;
  // A terminal pod's containers are not ready, whatever they say while they stop (upstream PodCompleted / PodFailed).
  const terminal = completed || phase === 'Failed';
  const containersReady = unready.length === 0 && !terminal;
  const notReadyReason = completed ? 'PodCompleted' : terminal ? 'PodFailed' : 'ContainersNotReady';
  const notReadyMsg = terminal ? undefined : `containers with unready status: [${unready.join(' ')}]`;
  // Readiness gates (upstream GeneratePodReadyCondition): each gate's condition, set by others, must be True.
  const gateProblems = ((pod.spec.readinessGates ?? []) as { conditionType: string }[])
    .map((g) => {
      const c = pod.status?.conditions?.find((x) => x.type === g.conditionType);
      return !c
        ? `corresponding condition of pod readiness gate "${g.conditionType}" does not exist.`
        : c.status !== 'True'
          ? `the status of pod readiness gate "${g.conditionType}" is not "True", but ${c.status}`
          : undefined;
    })
    .filter((x): x is string => !!x);
  const ready = containersReady && gateProblems.length === 0;
  const readyReason = !containersReady ? notReadyReason : 'ReadinessGatesNotReady';
  const readyMsg = !containersReady ? notReadyMsg : gateProblems.join(', ');
  const status: PodStatus = {
    ...kept,
    conditions: [
      condition('PodReadyToStartContainers', !!sandbox?.ready, ctx),
      condition(
        'Initialized',
        initialized,
        ctx,
        initialized ? (completed ? 'PodCompleted' : undefined) : 'ContainersNotInitialized',
        initialized ? undefined : `containers with incomplete status: [${incompleteInit.join(' ')}]`,
      ),
      condition('Ready', ready, ctx, ready ? undefined : readyReason, ready ? undefined : readyMsg),
      condition(
        'ContainersReady',
        containersReady,
        ctx,
        containersReady ? undefined : notReadyReason,
        containersReady ? undefined : notReadyMsg,
      ),
      condition('PodScheduled', true, ctx),
      // In-place resize: a resize not admitted yet, and one admitted but not applied.
      ...(ctx.allocation?.resize.pending
        ? [
            condition(
              'PodResizePending',
              true,
              ctx,
              ctx.allocation.resize.pending.reason,
              ctx.allocation.resize.pending.message,
            ),
          ]
        : []),
      ...(ctx.allocation?.resize.inProgress
        ? [
            condition(
              'PodResizeInProgress',
              true,
              ctx,
              ctx.allocation.resize.inProgress.error ? 'Error' : undefined,
              ctx.allocation.resize.inProgress.error,
            ),
          ]
        : []),
      // RestartAllContainers: True while the containers of the run before the restart are stopped
      // (upstream GenerateAllContainersRestartingCondition's reasons and message).
      ...(podUsesRestartAll(pod.spec) ? [allContainersRestarting(pod, rs, phase, ctx)] : []),
    ],
    hostIP: ctx.nodeIP,
    hostIPs: [{ ip: ctx.nodeIP }],
    startTime: ctx.apiStartTime ?? ctx.previous?.startTime ?? rfc3339(ctx.nowMs),
    containerStatuses: regular,
    qosClass: qosClass(pod),
  };
  // PodObservedGenerationTracking: the status and each condition the kubelet writes name the generation they saw.
  const generation = pod.metadata.generation;
  if (generation) {
    status.observedGeneration = generation;
    status.conditions = status.conditions!.map((c) => ({ ...c, observedGeneration: generation }));
  }
  // InPlacePodLevelResourcesVerticalScaling (beta, on), as upstream for every pod: the pod's requests as allocated,
  // added up; its resources as allocated, or, for a running pod with pod-level resources, what its cgroup has.
  const allocatedPod = ctx.allocation ? withResources(pod, ctx.allocation.allocated) : pod;
  const podRequests = podResourceRequests(allocatedPod);
  if (Object.keys(podRequests).length) status.allocatedResources = podRequests;
  const podLevelApplied = ctx.allocation?.actuated?.get(POD_LEVEL) ?? ctx.allocation?.allocated.get(POD_LEVEL);
  status.resources =
    pod.status?.phase === 'Running' && podLevelApplied
      ? { ...podLevelApplied }
      : effectivePodResources(allocatedPod, podRequests);
  if (podIP) {
    status.podIP = podIP;
    status.podIPs = podIPs.map((ip) => ({ ip }));
  }
  if (init.length) status.initContainerStatuses = init;
  const ephemeral = pod.spec.ephemeralContainers ?? [];
  if (ephemeral.length)
    status.ephemeralContainerStatuses = containerStatuses(
      pod,
      ephemeral,
      rs,
      ctx,
      'ContainerCreating',
      false,
      ctx.previous?.ephemeralContainerStatuses,
    ).map((x) => ({ ...x, ready: false }));
  return status;
}
