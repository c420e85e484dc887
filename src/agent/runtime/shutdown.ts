/**
 * Stopping every pod when the kubelet itself stops and its pods cannot outlive it (the in-process
 * runtime): each pod is killed with its own grace period (terminationGracePeriodSeconds, or a
 * pending deletion's), capped by shutdownGracePeriod when that is set (upstream graceful node
 * shutdown), all pods in parallel. Pods the runtime has but no source wants get the minimum grace.
 */
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { killPod } from './kill-pod.js';
import { gracePeriodOf } from './grace-period.js';
import type { RuntimeManager } from './runtime-manager.js';

/** The grace period (s) of `pod` at shutdown (pure). */
export function shutdownGraceSeconds(pod: Pod, shutdownGracePeriodMs: number): number {
  const own = gracePeriodOf(pod);
  return shutdownGracePeriodMs > 0 ? Math.min(own, Math.floor(shutdownGracePeriodMs / 1000)) : own;
}

/** Stops every pod in the runtime; resolves when all are stopped. */
export async function stopPodsForShutdown(d: {
  runtime: RuntimeService;
  runtimeManager: RuntimeManager;
  podManager: { getPodByUid(uid: string): Pod | undefined };
  shutdownGracePeriodMs: number;
  logger: Logger;
}): Promise<void> {
  const pods = await d.runtimeManager.listRuntimePods().catch(() => []);
  await Promise.all(
    pods.map(async (rp) => {
      const pod = d.podManager.getPodByUid(rp.uid) ?? {
        metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
        spec: { containers: [], terminationGracePeriodSeconds: 2 },
      };
      const grace = shutdownGraceSeconds(pod, d.shutdownGracePeriodMs);
      try {
        const status = await d.runtimeManager.getPodStatus(rp.uid, rp.name, rp.namespace);
        if (!status.containers.some((c) => c.state === 'running')) return;
        d.logger.info({ pod: `${rp.namespace}/${rp.name}`, gracePeriodSeconds: grace }, 'stopping pod for kubelet shutdown');
        await killPod(d.runtime, pod, { status, graceOverride: grace });
      } catch (err) {
        d.logger.warn({ pod: `${rp.namespace}/${rp.name}`, err: messageOf(err) }, 'stopping pod at shutdown failed');
      }
    }),
  );
}
