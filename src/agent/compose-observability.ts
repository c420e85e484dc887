/**
 * Wiring of observability around the core: the stats collector with its system containers,
 * pod worker durations per operation, kubelet_pod_start_duration_seconds (from the pod first
 * seen to all its containers running), and the routes' host over the managers.
 */
import type { CriRuntime } from '../cri/services.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { CgroupDirs } from '../lib/cgroup-usage.js';
import type { AgentConfig } from './agent-config.js';
import { StatsCollector } from './stats/collector.js';
import { cgroupDirs, detectCgroupLayout, ownCgroupDirs, qosCgroupDirs } from './stats/system-containers.js';
import { containerCgroupId, podCgroupId } from './stats/cgroup-ids.js';
import type { Pod } from '../api/types.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import type { PodManager } from './pods/pod-manager.js';
import type { StatusManager } from './status/status-manager.js';
import { createAgentHost, type AgentHostDeps } from './host.js';
import { createObservabilityHost, type ObservabilityDeps } from './stats/observability-host.js';
import type { PodSyncer, PodWorkers, SyncUpdateType } from './sync/pod-workers.js';
import { rfc3339 } from '../lib/time.js';

/**
 * Runs one pod worker step, observed in kubelet_pod_worker_duration_seconds{operation_type}:
 * upstream's SyncPodType of the update (create, update, sync; kill for the steps that stop it).
 */
export async function timedWorker<R>(
  metrics: KubeletMetrics,
  operation: SyncUpdateType | 'kill',
  fn: () => Promise<R>,
): Promise<R> {
  const end = metrics.podWorkerDuration.startTimer({ operation_type: operation });
  try {
    return await fn();
  } finally {
    end();
  }
}

/**
 * The pod workers' syncer: each step timed by its update type, a pod's first sync (create) also counted
 * (observePodCreate).
 */
export function timedSyncer(metrics: KubeletMetrics, syncer: PodSyncer, clock: Clock): PodSyncer {
  return {
    syncPod: (p, q, type) => {
      if (type === 'create') metrics.observePodCreate(p, clock.now());
      return timedWorker(metrics, type, () => syncer.syncPod(p, q, type));
    },
    syncTerminatingPod: (p, g) => timedWorker(metrics, 'kill', () => syncer.syncTerminatingPod(p, g)),
    syncTerminatedPod: (p) => timedWorker(metrics, 'kill', () => syncer.syncTerminatedPod(p)),
  };
}

/**
 * Observes each pod's start duration once, when its status first shows every container running; tells the startup SLI
 * tracker each status.
 */
export function trackPodStartDuration(d: {
  statusManager: StatusManager;
  podManager: PodManager;
  metrics: KubeletMetrics;
  clock: Clock;
}): void {
  const firstSeen = new Map<string, number>();
  d.statusManager.onChange((uid) => {
    if (firstSeen.get(uid) === -1) return;
    if (!d.podManager.getPodByUid(uid)) {
      firstSeen.delete(uid);
      return;
    }
    if (!firstSeen.has(uid)) firstSeen.set(uid, d.clock.monotonic());
    const st = d.statusManager.get(uid);
    if (st) d.metrics.podStartup.statusUpdated(uid, st);
    if (st?.phase === 'Running' && (st.containerStatuses ?? []).every((c) => c.state.running)) {
      d.metrics.podStartDuration.observe(undefined, (d.clock.monotonic() - firstSeen.get(uid)!) / 1000);
      firstSeen.set(uid, -1);
    }
  });
}

/**
 * The stats collector. System containers come from cgroups (v1 or v2, detected once): the kubelet's
 * (kubeletCgroups, else its own), the runtime's (--runtime-cgroups) and misc (systemCgroups) when
 * named, and the pods' kubepods cgroup, its QoS classes and each pod's own cgroup on a CRI runtime
 * with cgroupsPerQOS (the embedded runtime keeps its own subtree and answers ListPodSandboxStats).
 */
export function createStatsCollector(d: {
  cfg: AgentConfig;
  runtime: CriRuntime;
  /** The embedded runtime, in-process: its containers' cgroups are its own subtree's. */
  embeddedRuntime?: { containerCgroupDirs(id: string): CgroupDirs | undefined };
  podOf: (uid: string) => Pod | undefined;
  clock: Clock;
  logger: Logger;
}): StatsCollector {
  const { cfg } = d;
  const layout = detectCgroupLayout();
  const named = (name: string | undefined) => (layout && name ? cgroupDirs(layout, name) : undefined);
  const kubelet = named(cfg.systemCgroupNames?.kubelet) ?? (layout && ownCgroupDirs(layout));
  const runtime = named(cfg.systemCgroupNames?.runtime);
  const misc = named(cfg.systemCgroupNames?.misc);
  // The pods' cgroups a CRI runtime makes (the embedded runtime keeps its own subtree).
  const podsLayout = d.embeddedRuntime ? undefined : layout;
  const embedded = d.embeddedRuntime;
  const qos = () => (podsLayout ? qosCgroupDirs(podsLayout, cfg.cgroups) : {});
  return new StatsCollector({
    runtime: d.runtime,
    rootDir: cfg.rootDir,
    podLogsDir: cfg.podLogsDir,
    separateDiskGc: cfg.separateDiskGc,
    clock: d.clock,
    logger: d.logger,
    systemCgroups: () => ({ kubelet, runtime, misc, ...qos() }),
    // A CRI runtime makes each container's cgroup below the pod's; the embedded runtime in its subtree.
    containerCgroup: embedded
      ? (_uid, id) => embedded.containerCgroupDirs(id)
      : (uid, id) => {
          const pod = podsLayout && d.podOf(uid);
          return (
            pod &&
            cgroupDirs(podsLayout, containerCgroupId(podCgroupId(pod, cfg.cgroups), id, cfg.cgroups.cgroupDriver))
          );
        },
    // Each pod has its own cgroup with cgroupsPerQOS: its figures are read there, as cAdvisor does.
    ...(podsLayout && cfg.cgroups.cgroupsPerQOS
      ? {
          podCgroup: (uid: string) => {
            const pod = d.podOf(uid);
            return (
              pod && {
                dirs: cgroupDirs(podsLayout, podCgroupId(pod, cfg.cgroups)),
                hostNetwork: pod.spec.hostNetwork === true,
              }
            );
          },
        }
      : {}),
  });
}

/**
 * The routes' host over one set of managers: the agent's half (host.ts: pods, streaming, logs,
 * health) and the observability half (stats/observability-host.ts), which also sees the deleted
 * pods whose workers still terminate them.
 */
export function composeHost(
  cfg: AgentConfig,
  d: Omit<AgentHostDeps, 'nodeName' | 'syncFrequencyMs' | 'rootDir'> &
    Omit<ObservabilityDeps, 'nodeName' | 'startTime' | 'cgroups' | 'lingeringPods'> & {
      workers: Pick<PodWorkers, 'uids' | 'podOf'>;
    },
) {
  return {
    ...createAgentHost({ ...d, nodeName: cfg.nodeName, syncFrequencyMs: cfg.syncFrequencyMs, rootDir: cfg.rootDir }),
    ...createObservabilityHost({
      ...d,
      nodeName: cfg.nodeName,
      startTime: rfc3339(d.clock.now()),
      cgroups: cfg.cgroups,
      lingeringPods: () =>
        d.workers.uids().flatMap((uid) => (d.podManager.getPodByUid(uid) ? [] : (d.workers.podOf(uid) ?? []))),
    }),
  };
}
