/**
 * Applies a PodActions plan over CRI (upstream SyncPod, the side-effect half). Steps in order:
 * 1. kill the pod when asked (containers with grace, then sandboxes); stop unless a sandbox is due;
 * 2. kill containers that must be replaced;
 * 3. create the sandbox when asked (a failure ends this sync);
 * 4. report containers held by backoff (CrashLoopBackOff);
 * 5. for each container to start: ensure the image, record the restart in the backoff table,
 *    create, start. A failed step is recorded with its upstream reason; later containers still run.
 * Never throws for runtime failures: the next sync retries.
 */
import type { Container, Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import type { ImageManager } from '../images/image-manager.js';
import type { BackoffTable } from '../sync/backoff.js';
import type { PodActions } from './compute-pod-actions.js';
import { generateContainerConfig } from './container-config.js';
import { killPod, gracePeriodOf } from './kill-pod.js';
import type { PodRuntimeStatus } from './pod-runtime-status.js';
import { generateSandboxConfig } from './sandbox-config.js';
import type { StepResult } from './step-result.js';

/** What the executor needs. */
export interface ExecutorDeps { runtime: RuntimeService; images: ImageManager; backoff: BackoffTable; clock: Clock; podLogsDir: string }

function specOf(pod: Pod, name: string, init: boolean): Container | undefined {
  return (init ? pod.spec.initContainers ?? [] : pod.spec.containers).find((c) => c.name === name);
}

/** Applies plans. */
export class PodActionExecutor {
  constructor(private readonly deps: ExecutorDeps) {}

  async apply(pod: Pod, status: PodRuntimeStatus, plan: PodActions): Promise<StepResult[]> {
    const { runtime } = this.deps;
    const results: StepResult[] = [];
    // 1.
    if (plan.killPod) {
      results.push(...(await killPod(runtime, pod, status)));
      if (!plan.createSandbox) return results;
    }
    // 2.
    await Promise.all(plan.kill.map(async (k) => {
      try {
        await runtime.stopContainer(k.id, gracePeriodOf(pod));
        results.push({ action: 'KillContainer', target: k.name, ok: true, message: k.message });
      } catch (err) {
        results.push({ action: 'KillContainer', target: k.name, ok: false, reason: 'KillContainerError', message: messageOf(err) });
      }
    }));
    // 3.
    let sandboxId = plan.sandboxId;
    const sandboxConfig = generateSandboxConfig(pod, plan.attempt, { podLogsDir: this.deps.podLogsDir });
    if (plan.createSandbox) {
      try {
        sandboxId = await runtime.runPodSandbox(sandboxConfig);
        results.push({ action: 'CreatePodSandbox', target: sandboxId, ok: true });
      } catch (err) {
        results.push({ action: 'CreatePodSandbox', target: pod.metadata.name!, ok: false, reason: 'CreatePodSandboxError', message: `Failed to create pod sandbox: ${messageOf(err)}` });
        return results;
      }
    }
    // 4.
    for (const h of plan.backoff) {
      results.push({ action: 'StartContainer', target: h.name, init: h.init, ok: false, reason: 'CrashLoopBackOff', message: h.message, retryAfterMs: h.remainingMs });
    }
    // 5.
    for (const s of plan.start) {
      const spec = specOf(pod, s.name, s.init);
      if (!spec) continue;
      results.push(await this.startContainer(pod, spec, s, sandboxId, sandboxConfig));
    }
    return results;
  }

  private async startContainer(pod: Pod, c: Container, s: PodActions['start'][number], sandboxId: string, sandboxConfig: ReturnType<typeof generateSandboxConfig>): Promise<StepResult> {
    const base = { action: 'StartContainer' as const, target: c.name, init: s.init };
    const img = await this.deps.images.ensureImageExists(pod, c, sandboxConfig);
    if (!img.ok) return { ...base, ok: false, reason: img.reason, message: img.message, retryAfterMs: 10_000 };
    if (s.backoff) this.deps.backoff.next(s.backoff.key, s.backoff.eventMs, this.deps.clock.now());
    let id: string;
    try {
      id = await this.deps.runtime.createContainer(sandboxId, generateContainerConfig(pod, c, s.restartCount, img.imageRef), sandboxConfig);
    } catch (err) {
      return { ...base, ok: false, reason: 'CreateContainerError', message: messageOf(err) };
    }
    try {
      await this.deps.runtime.startContainer(id);
    } catch (err) {
      return { ...base, ok: false, reason: 'RunContainerError', message: messageOf(err) };
    }
    return { ...base, ok: true };
  }
}
