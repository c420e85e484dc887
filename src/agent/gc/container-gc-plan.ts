/**
 * The periodic container and sandbox garbage collection plan (upstream kuberuntime_gc.go), pure.
 * Evictable containers are those not running and created before now − minAge, grouped by pod and
 * name, newest first: a pod no source wants loses all of them, others keep maxPerPodContainer per
 * group; maxContainers ≥ 0 then caps the total (per group at most max(1, max/groups), then the
 * oldest overall go). Sandboxes that are not ready and no longer hold containers go: all of a pod
 * no source wants, all but the newest otherwise.
 */
import type * as cri from '../../cri/types.js';
import type { RuntimePod } from '../runtime/runtime-manager.js';
import { ContainerNameLabel } from '../runtime/labels.js';

/** Upstream's --minimum-container-ttl-duration, --maximum-dead-containers-per-container, --maximum-dead-containers. */
export interface ContainerGcPolicy {
  minAgeMs: number;
  maxPerPodContainer: number;
  maxContainers: number;
}

/** The kubelet's defaults. */
export const defaultContainerGcPolicy: ContainerGcPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

/** What to remove. */
export interface ContainerGcPlan {
  containers: string[];
  sandboxes: string[];
}

const nsToMs = (ns: number | string) => Number(ns) / 1e6;

/** Computes the plan for `pods`; `isActive(uid)` says whether a source still wants the pod. */
export function containerGcPlan(
  pods: readonly RuntimePod[],
  isActive: (uid: string) => boolean,
  nowMs: number,
  policy: ContainerGcPolicy,
): ContainerGcPlan {
  const groups: { active: boolean; items: cri.Container[] }[] = [];
  for (const p of pods) {
    const byName = new Map<string, cri.Container[]>();
    for (const c of p.containers) {
      if (c.state === 'CONTAINER_RUNNING' || nsToMs(c.created_at) > nowMs - policy.minAgeMs) continue;
      const name = c.labels?.[ContainerNameLabel] ?? c.metadata?.name ?? '';
      (byName.get(name) ?? byName.set(name, []).get(name)!).push(c);
    }
    const active = isActive(p.uid);
    for (const items of byName.values())
      groups.push({ active, items: items.sort((a, b) => Number(b.created_at) - Number(a.created_at)) });
  }
  const remove = new Set<string>();
  const keepPer = (g: { active: boolean; items: cri.Container[] }, n: number) => {
    for (const c of g.items.slice(g.active ? Math.max(0, n) : 0)) remove.add(c.id);
    g.items = g.active ? g.items.slice(0, Math.max(0, n)) : [];
  };
  // Each pod and container name keeps its newest maxPerPodContainer (a pod no one wants: none).
  for (const g of groups) keepPer(g, policy.maxPerPodContainer >= 0 ? policy.maxPerPodContainer : Infinity);
  // The node-wide cap: an even share per group first, then the oldest overall.
  if (policy.maxContainers >= 0) {
    let total = groups.reduce((n, g) => n + g.items.length, 0);
    if (total > policy.maxContainers) {
      const live = groups.filter((g) => g.items.length);
      for (const g of live) keepPer(g, Math.max(1, Math.floor(policy.maxContainers / live.length)));
      total = groups.reduce((n, g) => n + g.items.length, 0);
      const rest = groups.flatMap((g) => g.items).sort((a, b) => Number(a.created_at) - Number(b.created_at));
      for (const c of rest.slice(0, Math.max(0, total - policy.maxContainers))) remove.add(c.id);
    }
  }
  // Sandboxes that are not ready and hold no container that stays; an active pod keeps its newest.
  const sandboxes: string[] = [];
  for (const p of pods) {
    const holding = new Set(p.containers.filter((c) => !remove.has(c.id)).map((c) => c.pod_sandbox_id));
    const sorted = [...p.sandboxes].sort((a, b) => Number(b.created_at) - Number(a.created_at));
    const active = isActive(p.uid);
    for (const [i, s] of sorted.entries()) {
      if (s.state === 'SANDBOX_READY' || holding.has(s.id)) continue;
      if (active && i === 0) continue;
      sandboxes.push(s.id);
    }
  }
  return { containers: [...remove], sandboxes };
}
