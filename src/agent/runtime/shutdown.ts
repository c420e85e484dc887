/**
 * Stopping every pod when the kubelet itself stops and its pods cannot outlive it (the in-process
 * runtime). Without shutdownGracePeriod each pod is killed with its own grace period
 * (terminationGracePeriodSeconds, or a pending deletion's), all at once. With it, as upstream's
 * graceful node shutdown: regular pods first, each with at most shutdownGracePeriod −
 * shutdownGracePeriodCriticalPods, then the critical ones (priority ≥ system-critical, 2000000000)
 * with at most shutdownGracePeriodCriticalPods; or, with shutdownGracePeriodByPodPriority, its
 * groups from the lowest priority up. The pods of a group stop in parallel. Pods the runtime has
 * but no source wants get the minimum grace.
 */
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { killPod } from './kill-pod.js';
import { gracePeriodOf } from './grace-period.js';
import type { RuntimeManager } from './runtime-manager.js';
import { groupIndex, type ShutdownGroup } from './shutdown-groups.js';

export { SYSTEM_CRITICAL_PRIORITY, groupIndex, shutdownGroups, type ShutdownGroup } from './shutdown-groups.js';

/** The grace period (s) of `pod` in `group` (pure): its own, capped by the group's. */
export function shutdownGraceSeconds(pod: Pod, group: ShutdownGroup | undefined): number {
  const own = gracePeriodOf(pod);
  return group ? Math.min(own, group.graceSeconds) : own;
}

/** Stops every pod in the runtime; resolves when all are stopped. */
export async function stopPodsForShutdown(d: {
  runtime: RuntimeService;
  runtimeManager: RuntimeManager;
  podManager: { getPodByUid(uid: string): Pod | undefined };
  /** The shutdown groups (shutdownGroups; absent or empty: each pod its own grace period). */
  groups?: readonly ShutdownGroup[];
  logger: Logger;
}): Promise<void> {
  const runtimePods = await d.runtimeManager.listRuntimePods().catch(() => []);
  const groups = d.groups ?? [];
  const pods = runtimePods.map((rp) => {
    const pod = d.podManager.getPodByUid(rp.uid) ?? {
      metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
      spec: { containers: [], terminationGracePeriodSeconds: 2 },
    };
    return { rp, pod, group: groups.length ? groupIndex(groups, (pod.spec.priority as number | undefined) ?? 0) : 0 };
  });
  // Group by group, lowest priority first; without groups, all pods at once.
  for (let g = 0; g < Math.max(1, groups.length); g++) {
    await Promise.all(
      pods
        .filter((p) => p.group === g)
        .map(async ({ rp, pod }) => {
          const grace = shutdownGraceSeconds(pod, groups[g]);
          try {
            const status = await d.runtimeManager.getPodStatus(rp.uid, rp.name, rp.namespace);
            if (!status.containers.some((c) => c.state === 'running')) return;
            d.logger.info(
              { pod: `${rp.namespace}/${rp.name}`, gracePeriodSeconds: grace },
              'stopping pod for kubelet shutdown',
            );
            await killPod(d.runtime, pod, { status, graceOverride: grace });
          } catch (err) {
            d.logger.warn(
              { pod: `${rp.namespace}/${rp.name}`, err: messageOf(err) },
              'stopping pod at shutdown failed',
            );
          }
        }),
    );
  }
}
