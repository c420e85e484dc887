/**
 * Container lifecycle hooks (upstream kuberuntime lifecycle handler runner): postStart runs right
 * after StartContainer and must finish before the container counts as started — a failure kills
 * the container (`FailedPostStartHook`); preStop runs before the stop signal and its time counts
 * against the grace period — a failure is a `FailedPreStopHook` event ("PreStopHook failed": as
 * upstream's, without the hook's output, which may carry secrets; the log has it) and the stop goes on.
 * Handlers: exec (CRI ExecSync), httpGet (http-hook.ts: any answer succeeds; an HTTPS hook answered
 * in HTTP falls back to HTTP with a `LifecycleHTTPFallback` warning), sleep. Messages are upstream's.
 */
import type { Container, Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import { runProbeAction, type ProbeAction } from '../prober/probe-handlers.js';
import { formatPod } from './container-config.js';
import { podRef, type EventSink } from '../events/recorder.js';
import { MIN_GRACE_SECONDS } from './grace-period.js';
import { runHttpHook } from './http-hook.js';
import type { Logger } from '../../lib/logger.js';

/** Upstream's hook counters. */
export interface HookCounters {
  /** An HTTPS hook answered in HTTP that succeeded over HTTP (kubelet_lifecycle_handler_http_fallbacks_total). */
  httpFallback(): void;
  /** A sleep hook cut off before its seconds were up (kubelet_sleep_action_terminated_early_total). */
  sleepTerminatedEarly(): void;
}

/** Where a hook's side outcomes go: the pod's events, the log, and upstream's counters. */
export interface HookReporting {
  events?: EventSink;
  logger?: Logger;
  counters?: HookCounters;
}

/** A hook's outcome: undefined when it succeeded, else upstream's message. */
export async function runHook(
  kind: 'postStart' | 'preStop',
  pod: Pod,
  c: Container,
  o: { runtime: RuntimeService; containerId: string; podIP: string; timeoutMs: number } & HookReporting,
): Promise<string | undefined> {
  const handler = (c.lifecycle as Record<string, ProbeAction> | undefined)?.[kind];
  if (!handler) return undefined;
  if (handler.sleep) {
    const seconds = handler.sleep.seconds;
    await new Promise((r) => setTimeout(r, Math.min(seconds * 1000, o.timeoutMs)));
    if (seconds * 1000 <= o.timeoutMs) return undefined;
    // Upstream's runSleepHandler: the hook's context (the grace period) ended first.
    o.counters?.sleepTerminatedEarly();
    return `Sleep lifecycle hook (${seconds}) for Container "${c.name}" in Pod "${formatPod(pod)}" failed - error: container terminated before sleep hook finished`;
  }
  if (handler.httpGet) {
    const error = await runHttpHook(
      handler.httpGet,
      { container: c, podIP: o.podIP, timeoutMs: o.timeoutMs },
      (host) => {
        o.counters?.httpFallback();
        o.events?.record(
          podRef(pod),
          'Warning',
          'LifecycleHTTPFallback',
          `request to HTTPS lifecycle hook ${host} got HTTP response, retry with HTTP succeeded`,
        );
      },
    );
    return error === undefined
      ? undefined
      : `HTTP lifecycle hook (${handler.httpGet.path ?? ''}) for Container "${c.name}" in Pod "${formatPod(pod)}" failed - error: ${error}`;
  }
  const out = await runProbeAction(handler, {
    runtime: o.runtime,
    containerId: o.containerId,
    container: c,
    podIP: o.podIP,
    timeoutMs: o.timeoutMs,
  });
  if (out.result === 'success') return undefined;
  if (handler.exec) {
    const cmd = (handler.exec.command ?? []).join(' ');
    const err = out.exitCode !== undefined ? `command '${cmd}' exited with ${out.exitCode}: ` : out.output;
    return `Exec lifecycle hook ([${cmd}]) for Container "${c.name}" in Pod "${formatPod(pod)}" failed - error: ${err}, message: ${JSON.stringify(out.exitCode !== undefined ? out.output : '')}`;
  }
  return `${kind} hook for Container "${c.name}" in Pod "${formatPod(pod)}" failed - error: ${out.output}`;
}

/**
 * Runs the preStop hook of `c` (if any) within `graceSeconds` and returns the grace period left
 * for the stop signal (at least the minimum), recording FailedPreStopHook on failure.
 */
export async function preStop(
  pod: Pod,
  c: Container | undefined,
  o: { runtime: RuntimeService; containerId: string; podIP: string; graceSeconds: number } & HookReporting,
): Promise<number> {
  if (!c?.lifecycle || !(c.lifecycle as Record<string, unknown>).preStop || o.graceSeconds <= 0) return o.graceSeconds;
  const start = performance.now();
  const msg = await runHook('preStop', pod, c, {
    runtime: o.runtime,
    containerId: o.containerId,
    podIP: o.podIP,
    timeoutMs: o.graceSeconds * 1000,
    events: o.events,
    logger: o.logger,
    counters: o.counters,
  });
  if (msg) {
    o.logger?.warn(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, container: c.name, err: msg },
      'PreStop hook failed',
    );
    o.events?.record(podRef(pod, { name: c.name }), 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
  }
  const left = o.graceSeconds - Math.floor((performance.now() - start) / 1000);
  return Math.max(MIN_GRACE_SECONDS, left);
}
