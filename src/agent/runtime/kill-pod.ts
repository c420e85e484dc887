/**
 * Stopping a pod (upstream killPodWithSyncResult): every running container is stopped in
 * parallel with the pod's grace period, then every sandbox is stopped. Failures are returned,
 * not thrown: the caller decides (a sync retries at its next pass, a terminating pod's worker
 * reports them and tries again later, as upstream's pod worker does).
 */
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import { isCode } from '../../lib/errors.js';
import { goStatusText } from '../../cri/grpc-errors.js';
import type { PodRuntimeStatus } from './pod-runtime-status.js';
import type { StepResult } from './step-result.js';
import { podRef } from '../events/recorder.js';
import { preStop, type HookReporting } from './lifecycle-hooks.js';
import { gracePeriodOf } from './grace-period.js';
import { goQuote } from '../../lib/go-quote.js';
import { aggregateMessage } from '../../lib/aggregate-message.js';

/** Stops containers then sandboxes; returns one result per step. */
export async function killPod(
  runtime: RuntimeService,
  pod: Pod,
  o: { status: PodRuntimeStatus; graceOverride?: number } & HookReporting,
): Promise<StepResult[]> {
  const { status, events } = o;
  const grace = gracePeriodOf(pod, o.graceOverride);
  const running = status.containers.filter(
    (c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown',
  );
  const podIP = status.sandboxes[0]?.ip ?? '';
  const specs = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  const killOne = async (c: (typeof running)[number]): Promise<StepResult> => {
    if (c.state === 'running')
      events?.record(podRef(pod, { name: c.name }), 'Normal', 'Killing', `Stopping container ${c.name}`);
    try {
      const left =
        c.state === 'running'
          ? await preStop(
              pod,
              specs.find((s) => s.name === c.name),
              {
                runtime,
                containerId: c.id,
                podIP,
                graceSeconds: grace,
                events,
                logger: o.logger,
                counters: o.counters,
              },
            )
          : grace;
      await runtime.stopContainer(c.id, left);
      return { action: 'KillContainer', target: c.name, ok: true };
    } catch (err) {
      // A container already gone is stopped (upstream's killContainer ignores NotFound).
      if (isCode(err, 'NotFound')) return { action: 'KillContainer', target: c.name, ok: true };
      return {
        action: 'KillContainer',
        target: c.name,
        ok: false,
        reason: 'KillContainerError',
        message: goStatusText(err),
      };
    }
  };
  // Regular containers first, all at once; then sidecars one by one in reverse order (upstream).
  const sidecarOrder = (pod.spec.initContainers ?? [])
    .filter((c) => c.restartPolicy === 'Always')
    .map((c) => c.name)
    .reverse();
  const results = await Promise.all(running.filter((c) => !sidecarOrder.includes(c.name)).map(killOne));
  for (const name of sidecarOrder)
    for (const c of running.filter((x) => x.name === name)) results.push(await killOne(c));
  // One step for the pod's sandboxes, named by the pod's UID, as upstream's; one already gone is stopped.
  const uid = pod.metadata.uid ?? '';
  for (const s of status.sandboxes) {
    if (!s.ready) continue;
    try {
      await runtime.stopPodSandbox(s.id);
      results.push({ action: 'KillPodSandbox', target: uid, ok: true });
    } catch (err) {
      if (isCode(err, 'NotFound')) continue;
      results.push({
        action: 'KillPodSandbox',
        target: uid,
        ok: false,
        reason: 'KillPodSandboxError',
        message: goStatusText(err),
      });
    }
  }
  return results;
}

/**
 * The error a kill's failed steps make, as upstream's PodSyncResult.Error() words it (one step's
 * `failed to "KillContainer" for "main" with KillContainerError: "…"`; several as a Go aggregate
 * `[a, b]`), or undefined when every step succeeded. Pure.
 */
export function killFailure(results: readonly StepResult[]): string | undefined {
  const failures = results
    .filter((r) => !r.ok)
    .map(
      (r) => `failed to ${goQuote(r.action)} for ${goQuote(r.target)} with ${r.reason}: ${goQuote(r.message ?? '')}`,
    );
  return failures.length ? aggregateMessage(failures) : undefined;
}
