/**
 * Step 3 of a pod's actions: a new sandbox (upstream SyncPod's createPodSandbox, with the
 * kubelet's pod cgroup made first as upstream's syncPod does), with the runtime handler of the
 * pod's RuntimeClass. Not while the runtime's network is not ready (for a pod on its own network);
 * the pod directory exists before the runtime is asked.
 */
import { mkdir } from 'node:fs/promises';
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { goStatusText } from '../../cri/grpc-errors.js';
import { networkIps, sandboxOf } from './runtime-manager.js';
import { withUserNamespace } from './sandbox-config.js';
import type { StepResult } from './step-result.js';
import { podRef, type EventSink } from '../events/recorder.js';

/** The event reason of each failure reason. */
const FAILURE_EVENTS: Record<string, string> = {
  NetworkNotReady: 'NetworkNotReady',
  FailedCreatePodContainer: 'FailedCreatePodContainer',
  CreatePodSandboxError: 'FailedCreatePodSandBox',
  PodSandboxStatusError: 'FailedPodSandBoxStatus',
};

/** When a sync that could not make the sandbox is tried again: upstream's pod worker backoff after a failed sync. */
export const SYNC_ERROR_BACKOFF_MS = 10_000;

/**
 * A sandbox that could not be made: the step's result, and a Warning event on the pod, as upstream's syncPod records
 * it.
 */
export function sandboxFailed(
  pod: Pod,
  reason: string,
  message: string,
  events: EventSink | undefined,
  retryAfterMs?: number,
): StepResult {
  events?.record(podRef(pod), 'Warning', FAILURE_EVENTS[reason], message);
  return {
    action: 'CreatePodSandbox',
    target: pod.metadata.name!,
    ok: false,
    reason,
    message,
    ...(retryAfterMs ? { retryAfterMs } : {}),
  };
}

/** Creates the sandbox; the result names it (`target`, `sandbox`) or says why there is none. */
export async function createSandbox(
  pod: Pod,
  attempt: number,
  config: cri.PodSandboxConfig,
  d: {
    runtime: RuntimeService;
    clock: Clock;
    podDir: string;
    networkError(): string | undefined;
    podCgroups?: { ensure(pod: Pod): Promise<void> };
    /** The pod's runtime handler (its RuntimeClass's); absent without an apiserver: the default (""), as upstream. */
    runtimeHandler?(pod: Pod): Promise<string>;
    /** Why the pod's `hostUsers` rules out a sandbox on `handler` (user-namespaces.ts); undefined when it does not. */
    userNamespaceRefusal?(pod: Pod, handler: string): string | undefined;
    /** A `hostUsers: false` pod's user namespace: its ID range, allocated once its directory exists (userns/). */
    userNamespace?(pod: Pod): cri.UserNamespace;
    events?: EventSink;
  },
): Promise<StepResult> {
  const failed = (reason: string, message: string, retryAfterMs?: number) =>
    sandboxFailed(pod, reason, message, d.events, retryAfterMs);
  const netErr = pod.spec.hostNetwork ? undefined : d.networkError();
  if (netErr) return failed('NetworkNotReady', `network is not ready: ${netErr}`, 5000);
  try {
    await d.podCgroups?.ensure(pod);
  } catch (err) {
    return failed(
      'FailedCreatePodContainer',
      `unable to ensure pod container exists: ${messageOf(err)}`,
      SYNC_ERROR_BACKOFF_MS,
    );
  }
  let id: string;
  try {
    const handler = d.runtimeHandler ? await d.runtimeHandler(pod) : '';
    // Upstream refuses it while it makes the sandbox's config, before the runtime is asked.
    const refusal = d.userNamespaceRefusal?.(pod, handler);
    if (refusal)
      return failed('CreatePodSandboxError', `Failed to create pod sandbox: ${refusal}`, SYNC_ERROR_BACKOFF_MS);
    await mkdir(d.podDir, { recursive: true });
    const userns = pod.spec.hostUsers === false ? d.userNamespace?.(pod) : undefined;
    id = await d.runtime.runPodSandbox(userns ? withUserNamespace(config, userns) : config, handler);
  } catch (err) {
    return failed('CreatePodSandboxError', `Failed to create pod sandbox: ${goStatusText(err)}`, SYNC_ERROR_BACKOFF_MS);
  }
  // Only a pod on its own network needs the new sandbox's status (for its IP, as upstream asks
  // for it); a hostNetwork pod's sandbox is READY once RunPodSandbox returns.
  if (pod.spec.hostNetwork)
    return {
      action: 'CreatePodSandbox',
      target: id,
      ok: true,
      sandbox: { id, ready: true, createdAt: d.clock.now(), attempt, ip: '' },
    };
  try {
    const { status } = await d.runtime.podSandboxStatus(id);
    const ips = networkIps(status.network);
    return { action: 'CreatePodSandbox', target: id, ok: true, sandbox: sandboxOf(status, ips.ip, ips.additionalIps) };
  } catch (err) {
    // The sandbox is made: the next sync finds it (upstream's SyncPod fails here with its own event).
    return failed(
      'PodSandboxStatusError',
      `Unable to get pod sandbox status: ${goStatusText(err)}`,
      SYNC_ERROR_BACKOFF_MS,
    );
  }
}
