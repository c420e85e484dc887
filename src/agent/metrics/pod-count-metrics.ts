/**
 * Upstream's pod count gauges, read at scrape time from the pod manager and the pod workers:
 * kubelet_desired_pods{static}, kubelet_active_pods{static}, kubelet_mirror_pods,
 * kubelet_managed_ephemeral_containers and
 * kubelet_working_pods{lifecycle,config,static} (upstream's combinations, zero included: static
 * "unknown" for runtime_only); the counter kubelet_restarted_pods_total{static}. `static` is "true" for a pod from
 * a file or URL, "" for an apiserver pod.
 */
import type { Pod } from '../../api/types.js';
import { isStaticPod } from '../podconfig/types.js';
import { isActivePod } from '../pods/active-pods.js';
import type { KubeletMetrics } from './kubelet-metrics.js';
import { Counter, Gauge } from './registry.js';
import type { WorkerState } from '../sync/pod-workers.js';

/** What the counts are made of. */
export interface PodCountSource {
  /** The pods the kubelet is told to run (the pod manager's). */
  desired(): Pod[];
  /** The pod workers: each pod's lifecycle state. */
  workers(): { uid: string; state: WorkerState; pod?: Pod }[];
  /** Whether mirror pods are made (an apiserver is configured). */
  mirrors: boolean;
}

const staticLabel = (pod: Pod | undefined) => (pod && isStaticPod(pod) ? 'true' : '');

/** The figures (pure). */
export function podCounts(src: { desired: Pod[]; workers: ReturnType<PodCountSource['workers']>; mirrors: boolean }): {
  desired: Record<string, number>;
  active: Record<string, number>;
  mirror: number;
  /** The ephemeral containers of the desired pods (upstream's pod manager counts them). */
  ephemeralContainers: number;
  working: { lifecycle: string; config: string; static: string; count: number }[];
} {
  const desired: Record<string, number> = { '': 0, true: 0 };
  const desiredUids = new Set<string>();
  for (const p of src.desired) {
    desired[staticLabel(p)]++;
    desiredUids.add(p.metadata.uid!);
  }
  const active: Record<string, number> = { '': 0, true: 0 };
  const working = new Map<string, number>();
  // Upstream's combinations: a runtime-only pod's static is "unknown" (it has no config to tell).
  for (const lifecycle of ['sync', 'terminating', 'terminated']) {
    for (const config of ['desired', 'orphan'])
      for (const s of ['', 'true']) working.set(`${lifecycle}|${config}|${s}`, 0);
    working.set(`${lifecycle}|runtime_only|unknown`, 0);
  }
  for (const w of src.workers) {
    const config = desiredUids.has(w.uid) ? 'desired' : w.pod ? 'orphan' : 'runtime_only';
    const s = config === 'runtime_only' ? 'unknown' : staticLabel(w.pod);
    working.set(`${w.state}|${config}|${s}`, working.get(`${w.state}|${config}|${s}`)! + 1);
    if (config === 'desired' && w.pod && isActivePod(w.pod, w.state)) active[s]++;
  }
  return {
    desired,
    active,
    mirror: src.mirrors ? desired.true : 0,
    ephemeralContainers: src.desired.reduce((n, p) => n + (p.spec.ephemeralContainers?.length ?? 0), 0),
    working: [...working].map(([k, count]) => {
      const [lifecycle, config, s] = k.split('|');
      return { lifecycle, config, static: s, count };
    }),
  };
}

/**
 * Registers the gauges on `metrics`, read from `src` at each scrape, and the counter of pods
 * started anew after being created again with the same UID (`restarted`).
 */
export function registerPodCountMetrics(metrics: KubeletMetrics, src: PodCountSource): { restarted(pod: Pod): void } {
  let last: ReturnType<typeof podCounts> | undefined;
  // One count per scrape: the first gauge read computes it, the others reuse it.
  const counts = (first: boolean) =>
    first || !last
      ? (last = podCounts({ desired: src.desired(), workers: src.workers(), mirrors: src.mirrors }))
      : last;
  metrics.register(
    new Gauge(
      'kubelet_desired_pods',
      '[ALPHA] The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.',
      ['static'],
      (g) => {
        for (const [s, n] of Object.entries(counts(true).desired)) g.set({ static: s }, n);
      },
    ),
  );
  metrics.register(
    new Gauge(
      'kubelet_active_pods',
      '[ALPHA] The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.',
      ['static'],
      (g) => {
        for (const [s, n] of Object.entries(counts(false).active)) g.set({ static: s }, n);
      },
    ),
  );
  metrics.register(
    new Gauge(
      'kubelet_mirror_pods',
      '[ALPHA] The number of mirror pods the kubelet will try to create (one per admitted static pod)',
      [],
      (g) => g.set(undefined, counts(false).mirror),
    ),
  );
  metrics.register(
    new Gauge(
      'kubelet_managed_ephemeral_containers',
      '[ALPHA] Current number of ephemeral containers in pods managed by this kubelet.',
      [],
      (g) => g.set(undefined, counts(false).ephemeralContainers),
    ),
  );
  metrics.register(
    new Gauge(
      'kubelet_working_pods',
      '[ALPHA] Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible.',
      ['lifecycle', 'config', 'static'],
      (g) => {
        for (const w of counts(false).working)
          g.set({ lifecycle: w.lifecycle, config: w.config, static: w.static }, w.count);
      },
    ),
  );
  const restarted = metrics.register(
    new Counter(
      'kubelet_restarted_pods_total',
      '[ALPHA] Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)',
      ['static'],
    ),
  );
  for (const s of ['', 'true']) restarted.inc({ static: s }, 0);
  return { restarted: (pod) => restarted.inc({ static: staticLabel(pod) }) };
}
