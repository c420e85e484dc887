/**
 * The pod startup SLI, as upstream's pod_startup_latency_tracker: for a pod the kubelet first sees
 * on the apiserver watch before it has started (no status.startTime), the time from its
 * creationTimestamp until the watch shows every container running (after the kubelet's own status
 * said so), less the time spent pulling its images. Observed once per pod in
 * kubelet_pod_start_sli_duration_seconds and, with the pulls, kubelet_pod_start_total_duration_seconds,
 * and logged as upstream's "Observed pod startup duration" line. Static pods never come through
 * the watch, as upstream.
 */
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import { goDuration, goTimeString } from '../../lib/go-format.js';

/** When something happened: wall clock and the process's monotonic clock (ms). */
interface Instant {
  ms: number;
  mono: number;
}

interface PodState {
  firstStartedPulling?: Instant;
  lastFinishedPulling?: Instant;
  observedRunning?: Instant;
}

/** What the tracker reports to. */
export interface StartupLatencySink {
  observe(sliSeconds: number, totalSeconds: number): void;
}

/** upstream hasPodStartedSLO: every container running with a start time. */
function allStarted(pod: { status?: Pod['status'] }): boolean {
  const cs = pod.status?.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => !!c.state?.running?.startedAt);
}

/** Tracks each pod from its first watch sighting to its first running status seen on the watch. */
export class PodStartupLatencyTracker {
  private readonly pods = new Map<string, PodState>();
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
      const state = this.pods.get(uid);
      if (!state) {
        // Only pods that had not started when the kubelet first saw them.
        if (!pod.status?.startTime) this.pods.set(uid, {});
        continue;
      }
      if (state.observedRunning && allStarted(pod)) this.record(pod, state);
    }
    // Pods gone from the node (deleted, or recorded) leave nothing behind.
    for (const uid of this.pods.keys()) if (!seen.has(uid)) this.pods.delete(uid);
  }

  /** The kubelet's own status for `pod` (RecordStatusUpdated): when it first shows every container running. */
  statusUpdated(uid: string, status: Pod['status']): void {
    const state = this.pods.get(uid);
    if (state && !state.observedRunning && allStarted({ status })) state.observedRunning = this.now();
  }

  /** A pull for one of the pod's images began (the first one counts). */
  startedPulling(uid: string): void {
    const state = this.pods.get(uid);
    if (state && !state.firstStartedPulling) state.firstStartedPulling = this.now();
  }

  /** A pull for one of the pod's images ended (the last one counts). */
  finishedPulling(uid: string): void {
    const state = this.pods.get(uid);
    if (state) state.lastFinishedPulling = this.now();
  }

  private record(pod: Pod, state: PodState): void {
    this.pods.delete(pod.metadata.uid!);
    const created = Date.parse(pod.metadata.creationTimestamp ?? '');
    if (Number.isNaN(created)) return;
    const watchObserved = this.now();
    const e2eMs = watchObserved.ms - created;
    const pullingMs =
      state.firstStartedPulling && state.lastFinishedPulling
        ? state.lastFinishedPulling.ms - state.firstStartedPulling.ms
        : 0;
    const sli = (e2eMs - pullingMs) / 1000;
    this.deps.sink.observe(sli, e2eMs / 1000);
    const at = (i: Instant | undefined) => (i ? goTimeString(i.ms, i.mono) : goTimeString(undefined));
    this.deps.logger.info(
      {
        pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        podStartSLOduration: sli,
        podStartE2EDuration: goDuration(e2eMs),
        podCreationTimestamp: goTimeString(created),
        firstStartedPulling: at(state.firstStartedPulling),
        lastFinishedPulling: at(state.lastFinishedPulling),
        observedRunningTime: at(state.observedRunning),
        watchObservedRunningTime: at(watchObserved),
      },
      'Observed pod startup duration',
    );
  }
}
