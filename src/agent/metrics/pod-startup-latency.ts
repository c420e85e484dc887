/**
 * The pod startup SLI, as upstream's pod_startup_latency_tracker (v1.36, with kubernetes/kubernetes#131950): for a pod
 * the kubelet first sees on the apiserver watch before it has started (no status.startTime) and that is immediately
 * schedulable, the time from its creationTimestamp until the watch shows every container running (after the kubelet's
 * own status said so), less the time spent pulling its images (overlapping pulls counted once) and running its init
 * containers. The whole time is observed in kubelet_pod_start_total_duration_seconds; the SLI only for a stateless pod
 * (no volume but secrets, configMaps, downwardAPI and emptyDirs) in kubelet_pod_start_sli_duration_seconds, and the
 * first such pod not on the host network's in kubelet_first_network_pod_start_sli_duration_seconds. Logged as
 * upstream's "Observed pod startup duration" line. Static pods never come through the watch, as upstream.
 */
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import { goDuration, goTimeString } from '../../lib/go-format.js';

/** When something happened: wall clock and the process's monotonic clock (ms). */
interface Instant {
  ms: number;
  mono: number;
}

/** One image pull of the pod: from its start to its end (ms). */
export interface PullSession {
  start: number;
  end: number;
}

interface PodState {
  /** Pulls finished, in the order they finished; each took the oldest start still open. */
  pullSessions: PullSession[];
  /** Pulls started and not finished yet, oldest first. */
  pullStarts: number[];
  /** The time the pod's init containers ran, each from its start to its finish (ms). */
  initContainerRuntimeMs: number;
  /** When the init container running now started. */
  initContainerStart?: number;
  observedRunning?: Instant;
}

/** What the tracker reports to. */
export interface StartupLatencySink {
  /** A pod's start: the SLI (undefined for a stateful pod, which the SLI leaves out) and the whole time. */
  observe(sliSeconds: number | undefined, totalSeconds: number): void;
  /** The SLI of the first stateless pod not on the host network. */
  firstNetworkPod(sliSeconds: number): void;
}

/** upstream hasPodStartedSLO: every container running with a start time. */
function allStarted(pod: { status?: Pod['status'] }): boolean {
  const cs = pod.status?.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => !!c.state?.running?.startedAt);
}

/** upstream isPodUnschedulable: PodScheduled=False, a pod that was not immediately schedulable. */
function unschedulable(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.status === 'False');
}

/** upstream isStatefulPod: a volume other than a secret, configMap, downwardAPI or emptyDir (a projected one too). */
export function isStatefulPod(pod: Pod): boolean {
  return ((pod.spec.volumes ?? []) as Record<string, unknown>[]).some(
    (v) => !v.secret && !v.configMap && !v.downwardAPI && !v.emptyDir,
  );
}

/** upstream calculateImagePullingTime: the time some pull was running, each moment counted once. Pure. */
export function imagePullingMs(sessions: readonly PullSession[]): number {
  let total = 0;
  let currentEnd = 0;
  sessions.forEach((session, i) => {
    if (i === 0 || session.start > currentEnd) {
      total += session.end - session.start;
      currentEnd = session.end;
    } else if (session.end > currentEnd) {
      total += session.end - currentEnd;
      currentEnd = session.end;
    }
  });
  return total;
}

/** Tracks each pod from its first watch sighting to its first running status seen on the watch. */
export class PodStartupLatencyTracker {
  private readonly pods = new Map<string, PodState>();
  /** Pods left out for good: not immediately schedulable when seen. */
  private readonly excluded = new Set<string>();
  private firstNetworkPodSeen = false;

  constructor(private readonly deps: { sink: StartupLatencySink; logger: Logger; now?: () => Instant }) {}

  private now(): Instant {
    return this.deps.now?.() ?? { ms: Date.now(), mono: performance.now() };
  }

  /** The apiserver source's full set of pods bound here, as it changed (ObservedPodOnWatch for each). */
  observedOnWatch(pods: readonly Pod[]): void {
    const seen = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      if (!uid) continue;
      seen.add(uid);
      if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') {
        this.pods.delete(uid);
        continue;
      }
      const state = this.pods.get(uid);
      if (!state) {
        // Only pods that had not started when the kubelet first saw them, and could be scheduled at once.
        if (this.excluded.has(uid) || pod.status?.startTime) continue;
        if (unschedulable(pod)) this.excluded.add(uid);
        else this.pods.set(uid, { pullSessions: [], pullStarts: [], initContainerRuntimeMs: 0 });
        continue;
      }
      if (unschedulable(pod)) {
        this.pods.delete(uid);
        this.excluded.add(uid);
        continue;
      }
      if (state.observedRunning && allStarted(pod)) this.record(pod, state);
    }
    // Pods gone from the node (deleted, or recorded) leave nothing behind.
    for (const uid of this.pods.keys()) if (!seen.has(uid)) this.pods.delete(uid);
    for (const uid of this.excluded) if (!seen.has(uid)) this.excluded.delete(uid);
  }

  /** The kubelet's own status for `pod` (RecordStatusUpdated): when it first shows every container running. */
  statusUpdated(uid: string, status: Pod['status']): void {
    const state = this.pods.get(uid);
    if (state && !state.observedRunning && allStarted({ status })) state.observedRunning = this.now();
  }

  /** A pull for one of the pod's images began. */
  startedPulling(uid: string): void {
    this.pods.get(uid)?.pullStarts.push(this.now().ms);
  }

  /** A pull for one of the pod's images ended: it closes the oldest pull still open. */
  finishedPulling(uid: string): void {
    const state = this.pods.get(uid);
    const start = state?.pullStarts.shift();
    if (state && start !== undefined) state.pullSessions.push({ start, end: this.now().ms });
  }

  /** One of the pod's init containers (not a sidecar) started at `atMs`. */
  initContainerStarted(uid: string, atMs: number): void {
    const state = this.pods.get(uid);
    if (state) state.initContainerStart = atMs;
  }

  /** The init container that started last finished at `atMs`; a finish without a start counts nothing. */
  initContainerFinished(uid: string, atMs: number): void {
    const state = this.pods.get(uid);
    if (state?.initContainerStart === undefined) return;
    state.initContainerRuntimeMs += Math.max(0, atMs - state.initContainerStart);
    state.initContainerStart = undefined;
  }

  private record(pod: Pod, state: PodState): void {
    this.pods.delete(pod.metadata.uid!);
    const created = Date.parse(pod.metadata.creationTimestamp ?? '');
    if (Number.isNaN(created)) return;
    const watchObserved = this.now();
    const e2eMs = watchObserved.ms - created;
    const pullingMs = imagePullingMs(state.pullSessions);
    const sli = (e2eMs - pullingMs - state.initContainerRuntimeMs) / 1000;
    const stateful = isStatefulPod(pod);
    this.deps.sink.observe(stateful ? undefined : sli, e2eMs / 1000);
    if (!stateful && !pod.spec.hostNetwork && !this.firstNetworkPodSeen) {
      this.firstNetworkPodSeen = true;
      this.deps.sink.firstNetworkPod(sli);
    }
    const at = (i: Instant | undefined) => (i ? goTimeString(i.ms, i.mono) : goTimeString(undefined));
    this.deps.logger.info(
      {
        pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        podStartSLOduration: sli,
        podStartE2EDuration: goDuration(e2eMs),
        totalImagesPullingTime: goDuration(pullingMs),
        totalInitContainerRuntime: goDuration(state.initContainerRuntimeMs),
        isStatefulPod: stateful,
        podCreationTimestamp: goTimeString(created),
        imagePullSessionsCount: state.pullSessions.length,
        imagePullSessionsStartsCount: state.pullStarts.length,
        observedRunningTime: at(state.observedRunning),
        watchObservedRunningTime: at(watchObserved),
      },
      'Observed pod startup duration',
    );
  }
}
