/**
 * computePodActions: what must change for the pod's runtime state to match its spec (upstream
 * kuberuntime computePodActions + the doBackOff decision). Pure: everything it needs is in its
 * arguments; the executor (executor.ts) applies the plan.
 *
 * 1. Sandbox: none, not ready, or more than one ready → create a new one (attempt + 1) after
 *    killing the pod; a finished pod that must not restart gets no new sandbox.
 * 2. Init containers, in order: start the first not yet succeeded; a failed one restarts
 *    (or fails the pod when restartPolicy is Never); a running one is waited for. A sidecar
 *    (restartPolicy: Always) only has to be started (running, startup probe passed) before the
 *    next one runs, and is restarted whenever it exits, whatever the pod's restartPolicy.
 * 3. Regular containers: start the ones that should (re)start, replace running ones whose spec
 *    hash changed or whose liveness/startup probe failed; a restart of a crashed container waits
 *    for its backoff (CrashLoopBackOff). Sidecars that exited are restarted.
 *    Ephemeral containers added to a running pod start once and never restart.
 * 4. Nothing running and nothing to start, or every regular container finished for good (running
 *    sidecars do not keep a pod alive) → kill the pod (release the sandbox).
 */
import {
  RESTART_ALL,
  hasRestartAllRule,
  containerShouldRestart,
  matchingRestartRule,
  podRestartsOnFailure,
  restartsAfterProbeKill,
} from './restart-rules.js';
import type { Container, Pod } from '../../api/types.js';
import { formatDuration } from '../../lib/duration.js';
import { backoffKey, backoffRemaining, type BackoffEntry } from '../sync/backoff.js';
import { containerHash, sameContainerSpec } from './container-hash.js';
import {
  containerInstances,
  anyRegularContainerCreated,
  latestContainer,
  type PodRuntimeStatus,
  type RuntimeContainer,
} from './pod-runtime-status.js';

/** Inputs that are not the pod or its runtime state. */
export interface PodActionsSnapshot {
  nowMs: number;
  backoff: ReadonlyMap<string, BackoffEntry>;
  /** Liveness and startup probe results by container name and instance id (undefined = no such probe). */
  probes?: {
    liveness(name: string, id: string): string | undefined;
    startup(name: string, id: string): string | undefined;
  };
}

/** A container to create and start. `backoff` is recorded by the executor when it restarts a crashed one. */
export interface ContainerToStart {
  name: string;
  init: boolean;
  restartCount: number;
  backoff?: { key: string; eventMs: number };
  /** An ephemeral container (kubectl debug). */ ephemeral?: boolean;
}
/** A running container to stop. */
export interface ContainerToKill {
  id: string;
  name: string;
  reason: string;
  message: string;
  /** A probe-level terminationGracePeriodSeconds overriding the pod's. */ gracePeriodSeconds?: number;
  /** Stopped without its preStop hook (the pod restarts all its containers: RestartAllContainers). */
  skipPreStop?: boolean;
}
/** A container held back by crash-loop backoff. */
export interface BackoffHold {
  name: string;
  init: boolean;
  message: string;
  remainingMs: number;
}

/** The plan for one sync of one pod. */
export interface PodActions {
  killPod: boolean;
  createSandbox: boolean;
  sandboxId: string;
  attempt: number;
  start: ContainerToStart[];
  kill: ContainerToKill[];
  backoff: BackoffHold[];
  /** The pod cannot make progress (init container failed with restartPolicy Never). */
  failed: boolean;
  /** Why the sandbox is not usable, in upstream's words (PodSandboxChanged), when it is not. */
  sandboxChange?: string;
}

/** An init container with restartPolicy Always (a sidecar). */
export function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

/** `c` is one of `pod`'s init containers and a sidecar (upstream IsRestartableInitContainer). */
export const isRestartableInitContainer = (pod: Pod, c: Container): boolean =>
  isSidecar(c) && (pod.spec.initContainers ?? []).some((init) => init.name === c.name);

/** Upstream ShouldContainerBeRestarted (with ContainerRestartRules). */
export function shouldContainerBeRestarted(pod: Pod, c: Container, inst: RuntimeContainer | undefined): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  if (!inst) return true;
  if (inst.state === 'running') return false;
  if (inst.state === 'created' || inst.state === 'unknown') return true;
  return containerShouldRestart(c, pod.spec, inst.exitCode);
}

/** A container that exited and will not be started again (its restart policy and rules say so). */
function finishedForGood(pod: Pod, status: PodRuntimeStatus, c: Container): boolean {
  const inst = latestContainer(status, c.name);
  return !!inst && inst.state === 'exited' && !containerShouldRestart(c, pod.spec, inst.exitCode);
}

/**
 * The kill of a running container whose startup or liveness probe failed, in upstream's words
 * (a regular container "will be restarted"; a sidecar is an init container), with the probe's own
 * terminationGracePeriodSeconds when it sets one (upstream setTerminationGracePeriod, for both).
 */
function probeKill(
  c: Container,
  inst: { id: string },
  snap: PodActionsSnapshot,
  sidecar: boolean,
): PodActions['kill'][number] | undefined {
  const probe =
    snap.probes?.startup(c.name, inst.id) === 'failure'
      ? 'startup'
      : snap.probes?.liveness(c.name, inst.id) === 'failure'
        ? 'liveness'
        : undefined;
  if (!probe) return undefined;
  const grace = (
    (probe === 'startup' ? c.startupProbe : c.livenessProbe) as { terminationGracePeriodSeconds?: number } | undefined
  )?.terminationGracePeriodSeconds;
  return {
    id: inst.id,
    name: c.name,
    reason: `Container ${c.name} failed ${probe} probe`,
    message: sidecar
      ? `Init container ${c.name} failed ${probe} probe`
      : `Container ${c.name} failed ${probe} probe, will be restarted`,
    ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
  };
}

/**
 * When the pod last asked all its containers to restart (RestartAllContainers,
 * RestartAllContainersOnContainerExits): the latest exit of a container with a rule of that action
 * matching its exit code, in ms; 0 when none did. Instances created before it belong to the run
 * before the restart. Pure.
 */
export function restartAllEpoch(pod: Pod, status: PodRuntimeStatus): number {
  let epoch = 0;
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    if (!hasRestartAllRule(c)) continue;
    for (const inst of containerInstances(status, c.name))
      if (inst.state === 'exited' && matchingRestartRule(c, inst.exitCode)?.action === RESTART_ALL)
        epoch = Math.max(epoch, inst.finishedAt || inst.createdAt);
  }
  return epoch;
}

/** Containers of the run before the epoch that still run: stopped before anything starts again. */
export function staleContainers(status: PodRuntimeStatus, epoch: number): RuntimeContainer[] {
  return epoch ? status.containers.filter((c) => c.state === 'running' && c.createdAt < epoch) : [];
}

/**
 * Computes the plan. After a RestartAllContainers exit the pod starts over in its sandbox: the
 * containers still running are stopped (without preStop hooks, as upstream), then the containers
 * run again from the first init container; only instances created since count, but the restart
 * counts go on.
 */
export function computePodActions(pod: Pod, full: PodRuntimeStatus, snap: PodActionsSnapshot): PodActions {
  const epoch = pod.metadata.deletionTimestamp ? 0 : restartAllEpoch(pod, full);
  const status = epoch ? { ...full, containers: full.containers.filter((c) => c.createdAt > epoch) } : full;
  const uid = pod.metadata.uid!;
  const latestSandbox = status.sandboxes[0];
  const readySandboxes = status.sandboxes.filter((s) => s.ready).length;
  const actions: PodActions = {
    killPod: false,
    createSandbox: false,
    sandboxId: latestSandbox?.id ?? '',
    attempt: latestSandbox?.attempt ?? 0,
    start: [],
    kill: [],
    backoff: [],
    failed: false,
  };
  const hasRunning = status.containers.some((c) => c.state === 'running');

  const startOrHold = (c: Container, init: boolean) => {
    const latest = latestContainer(full, c.name);
    const restartCount = latest ? latest.restartCount + 1 : 0;
    // Every instance, those before a restart of all containers too (upstream doBackOff reads the whole pod status):
    // a pod that keeps restarting all its containers backs off as a crashing container does.
    const lastExited = containerInstances(full, c.name).find((x) => x.state === 'exited');
    if (!lastExited) {
      actions.start.push({ name: c.name, init, restartCount });
      return;
    }
    const key = backoffKey(uid, c.name, containerHash(c));
    const entry = snap.backoff.get(key);
    const remaining = backoffRemaining(entry, lastExited.finishedAt, snap.nowMs);
    if (remaining > 0) {
      const message = `back-off ${formatDuration(entry!.delayMs)} restarting failed container=${c.name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${uid})`;
      actions.backoff.push({ name: c.name, init, message, remainingMs: remaining });
      return;
    }
    actions.start.push({ name: c.name, init, restartCount, backoff: { key, eventMs: lastExited.finishedAt } });
  };

  const initContainers = pod.spec.initContainers ?? [];

  // 1. Sandbox.
  if (!latestSandbox || !latestSandbox.ready || readySandboxes > 1) {
    actions.sandboxChange = !latestSandbox
      ? 'No sandbox for pod can be found. Need to start a new one'
      : readySandboxes > 1
        ? 'Multiple sandboxes are ready for Pod. Need to reconcile them'
        : 'No ready sandbox for pod can be found. Need to start a new one';
    actions.createSandbox = true;
    actions.killPod = status.sandboxes.length > 0 || hasRunning;
    actions.attempt = latestSandbox ? latestSandbox.attempt + 1 : 0;
    actions.sandboxId = '';
    if (!podRestartsOnFailure(pod.spec) && latestSandbox && status.containers.length > 0) {
      actions.createSandbox = false;
      return actions;
    }
    const toStart = pod.spec.containers.filter((c) => !finishedForGood(pod, status, c));
    // Nothing left to run, its initialization done (a regular container was created): no new sandbox, and no init
    // container run again (upstream: hasAnyRegularContainerCreated).
    const initialized =
      initContainers.length === 0 ||
      anyRegularContainerCreated(
        status,
        pod.spec.containers.map((c) => c.name),
      );
    if (toStart.length === 0 && initialized) {
      actions.createSandbox = false;
      return actions;
    }
    if (initContainers.length > 0) startOrHold(initContainers[0], true);
    else for (const c of toStart) startOrHold(c, false);
    return actions;
  }

  // 1b. A restart of all containers: the old run stops first.
  const stale = staleContainers(full, epoch);
  if (stale.length) {
    actions.kill = stale.map((inst) => ({
      id: inst.id,
      name: inst.name,
      reason: 'RestartAllContainers',
      message: `Container ${inst.name} will be restarted: the pod restarts all its containers`,
      skipPreStop: true,
    }));
    return actions;
  }

  // 2. Init containers.
  const regularStarted = pod.spec.containers.some((c) => latestContainer(status, c.name));
  const sidecarStarted = (c: Container, id: string) =>
    !c.startupProbe || snap.probes?.startup(c.name, id) === 'success';
  if (!regularStarted) {
    for (const c of initContainers) {
      const inst = latestContainer(status, c.name);
      if (isSidecar(c)) {
        if (inst?.state === 'running') {
          // A sidecar that failed its startup or liveness probe is restarted before anything goes on.
          const kill = probeKill(c, inst, snap, true);
          if (kill) {
            actions.kill.push(kill);
            actions.start.push({ name: c.name, init: true, restartCount: inst.restartCount + 1 });
            return actions;
          }
          if (sidecarStarted(c, inst.id)) continue;
          return actions;
        }
        startOrHold(c, true);
        return actions;
      }
      if (inst && inst.state === 'exited' && inst.exitCode === 0) continue;
      if (inst && inst.state === 'running') return actions;
      if (inst && inst.state === 'exited' && !containerShouldRestart(c, pod.spec, inst.exitCode)) {
        actions.failed = true;
        actions.killPod = true;
        return actions;
      }
      startOrHold(c, true);
      return actions;
    }
  }

  // 3. Regular containers.
  let keep = 0;
  for (const c of pod.spec.containers) {
    const inst = latestContainer(status, c.name);
    if (!inst || inst.state !== 'running') {
      if (shouldContainerBeRestarted(pod, c, inst)) startOrHold(c, false);
      continue;
    }
    // A failed liveness or startup probe: kill, and restart when the restart policy says so.
    const kill = probeKill(c, inst, snap, false);
    if (kill) {
      actions.kill.push(kill);
      if (restartsAfterProbeKill(c, pod.spec))
        actions.start.push({ name: c.name, init: false, restartCount: inst.restartCount + 1 });
      continue;
    }
    if (inst.hash && !sameContainerSpec(c, inst.hash)) {
      actions.kill.push({
        id: inst.id,
        name: c.name,
        reason: 'Container spec hash changed',
        message: `Container ${c.name} definition changed, will be restarted`,
      });
      actions.start.push({ name: c.name, init: false, restartCount: inst.restartCount + 1 });
      continue;
    }
    keep++;
  }

  // Ephemeral containers (kubectl debug) start once, in the running pod, and are never restarted.
  if (keep > 0)
    for (const e of pod.spec.ephemeralContainers ?? [])
      if (!latestContainer(full, e.name))
        actions.start.push({ name: e.name, init: false, restartCount: 0, ephemeral: true });
  // 4. Nothing left to run: every regular container finished for good (sidecars do not count).
  const regularPending = actions.start.some((x) => !x.init && !x.ephemeral) || actions.backoff.some((x) => !x.init);
  if (keep === 0 && !regularPending) {
    actions.killPod = true;
    actions.start = [];
    actions.backoff = [];
    return actions;
  }
  // Sidecars that exited after the regular containers started are restarted, whatever the policy.
  if (regularStarted) {
    for (const c of initContainers.filter(isSidecar)) {
      const inst = latestContainer(status, c.name);
      if (!inst || inst.state !== 'running') {
        startOrHold(c, true);
        continue;
      }
      const kill = probeKill(c, inst, snap, true);
      if (kill) {
        actions.kill.push(kill);
        actions.start.push({ name: c.name, init: true, restartCount: inst.restartCount + 1 });
      }
    }
  }
  return actions;
}
