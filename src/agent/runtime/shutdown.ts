/**
 * Stopping every pod when the kubelet itself stops and its pods cannot outlive it (the in-process
 * runtime). Without shutdownGracePeriod each pod is killed with its own grace period
 * (terminationGracePeriodSeconds, or a pending deletion's), all at once. With it, as upstream's
 * graceful node shutdown: regular pods first, each with at most shutdownGracePeriod −
 * shutdownGracePeriodCriticalPods, then the critical ones (priority ≥ system-critical, 2000000000)
 * with at most shutdownGracePeriodCriticalPods; the pods of a group in parallel. Pods the runtime
 * has but no source wants get the minimum grace.
 */
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { killPod } from './kill-pod.js';
import { gracePeriodOf } from './grace-period.js';
import type { RuntimeManager } from './runtime-manager.js';

/** Upstream scheduling.SystemCriticalPriority. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** A shutdown group: the pods from `priority` up, killed with at most `graceSeconds`. */
export interface ShutdownGroup {
  priority: number;
  graceSeconds: number;
}

/** The groups (upstream migrateConfig): none without shutdownGracePeriod (each pod its own grace). */
export function shutdownGroups(shutdownGracePeriodMs: number, criticalPodsMs: number): ShutdownGroup[] {
  if (shutdownGracePeriodMs <= 0 || criticalPodsMs > shutdownGracePeriodMs) return [];
  return [
    { priority: 0, graceSeconds: Math.floor((shutdownGracePeriodMs - criticalPodsMs) / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, graceSeconds: Math.floor(criticalPodsMs / 1000) },
  ];
}

/** The index of the group of a pod with `priority` (upstream groupByPriority): the highest group at or below it, else the lowest. */
export function groupIndex(groups: readonly ShutdownGroup[], priority: number): number {
  let index = 0;
  groups.forEach((g, i) => {
    if (g.priority <= priority) index = i;
  });
  return index;
}

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
  /** shutdownGracePeriod (absent or 0: each pod its own grace period) and shutdownGracePeriodCriticalPods. */
  shutdownGracePeriodMs?: number;
  shutdownGracePeriodCriticalPodsMs?: number;
  logger: Logger;
}): Promise<void> {
  const runtimePods = await d.runtimeManager.listRuntimePods().catch(() => []);
  const groups = shutdownGroups(d.shutdownGracePeriodMs ?? 0, d.shutdownGracePeriodCriticalPodsMs ?? 0);
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
            d.logger.info({ pod: `${rp.namespace}/${rp.name}`, gracePeriodSeconds: grace }, 'stopping pod for kubelet shutdown');
            await killPod(d.runtime, pod, { status, graceOverride: grace });
          } catch (err) {
            d.logger.warn({ pod: `${rp.namespace}/${rp.name}`, err: messageOf(err) }, 'stopping pod at shutdown failed');
          }
        }),
    );
  }
}
