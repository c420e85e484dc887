/**
 * The groups pods stop in when the kubelet shuts down (upstream graceful node shutdown), pure and
 * free of the runtime so main can compute them before anything else is loaded.
 */

import { parseDuration } from '../../lib/duration.js';

/** Upstream scheduling.SystemCriticalPriority. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** A shutdown group: the pods from `priority` up, killed with at most `graceSeconds`. */
export interface ShutdownGroup {
  priority: number;
  graceSeconds: number;
}

/**
 * The groups: shutdownGracePeriodByPodPriority's, lowest priority first; else upstream's
 * migrateConfig of the two periods; none without either (each pod its own grace).
 */
export function shutdownGroups(
  shutdownGracePeriodMs: number,
  criticalPodsMs: number,
  byPriority: readonly ShutdownGroup[] = [],
): ShutdownGroup[] {
  if (byPriority.length) return [...byPriority].sort((a, b) => a.priority - b.priority);
  if (shutdownGracePeriodMs <= 0 || criticalPodsMs > shutdownGracePeriodMs) return [];
  return [
    { priority: 0, graceSeconds: Math.floor((shutdownGracePeriodMs - criticalPodsMs) / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, graceSeconds: Math.floor(criticalPodsMs / 1000) },
  ];
}

/**
 * The index of the group of a pod with `priority` (upstream groupByPriority): the highest group at or below it, else
 * the lowest.
 */
export function groupIndex(groups: readonly ShutdownGroup[], priority: number): number {
  let index = 0;
  groups.forEach((g, i) => {
    if (g.priority <= priority) index = i;
  });
  return index;
}

/** The groups a KubeletConfiguration asks for. */
export function shutdownGroupsOf(kc: {
  shutdownGracePeriod: string;
  shutdownGracePeriodCriticalPods: string;
  shutdownGracePeriodByPodPriority: { priority: number; shutdownGracePeriodSeconds: number }[];
}): ShutdownGroup[] {
  return shutdownGroups(
    parseDuration(kc.shutdownGracePeriod) ?? 0,
    parseDuration(kc.shutdownGracePeriodCriticalPods) ?? 0,
    kc.shutdownGracePeriodByPodPriority.map((g) => ({
      priority: g.priority,
      graceSeconds: g.shutdownGracePeriodSeconds,
    })),
  );
}

/**
 * Graceful node shutdown as a KubeletConfiguration asks for it (upstream NewManager): off with the
 * GracefulNodeShutdown gate off or no grace period set; shutdownGracePeriodByPodPriority only with
 * GracefulNodeShutdownBasedOnPodPriority on (which also keeps the shutdown's times), else the two periods.
 */
export function nodeShutdownOf(kc: {
  shutdownGracePeriod: string;
  shutdownGracePeriodCriticalPods: string;
  shutdownGracePeriodByPodPriority: { priority: number; shutdownGracePeriodSeconds: number }[];
  featureGates?: Record<string, boolean>;
}): { groups: ShutdownGroup[]; recordTimes: boolean } | undefined {
  if (kc.featureGates?.GracefulNodeShutdown === false) return undefined;
  const byPriority = kc.featureGates?.GracefulNodeShutdownBasedOnPodPriority !== false;
  const groups = shutdownGroupsOf({
    ...kc,
    shutdownGracePeriodByPodPriority: byPriority ? kc.shutdownGracePeriodByPodPriority : [],
  });
  return groups.length ? { groups, recordTimes: byPriority } : undefined;
}
