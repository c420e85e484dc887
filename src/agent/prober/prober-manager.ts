/**
 * The prober manager (upstream pkg/kubelet/prober): one worker per container and probe kind.
 *
 *  PodSync ─► syncPod(pod, runtime status, pod IP): workers for running containers with probes
 *  worker: runs when probe-schedule.ts says (jitter after a kubelet start, then every
 *          periodSeconds on a shared grid; a running container without a readiness result is
 *          probed at once, as upstream's manual trigger): container not running or within
 *          initialDelaySeconds → no probe; liveness/readiness wait for a startup probe to
 *          succeed; result → probe-state.ts; a changed result asks for a pod sync
 *  results ─► status (ready / started) and computePodActions (liveness/startup failure → restart)
 *  Unhealthy events ("<Kind> probe failed: <output>") for every failed probe, as upstream.
 */
import type { Container, Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { podRef, type EventSink } from '../events/recorder.js';
import { latestContainer, type PodRuntimeStatus } from '../runtime/pod-runtime-status.js';
import { runProbeAction, type ProbeAction } from './probe-handlers.js';
import {
  initialState,
  resumedState,
  nextState,
  probeTiming,
  type ProbeKind,
  type ProbeResult,
  type ProbeState,
} from './probe-state.js';
import { firstDue, initialDelayLeftMs, nextDue } from './probe-schedule.js';
import { CoalescedTimers } from '../../lib/coalesced-timers.js';
import { Histogram } from '../metrics/registry.js';

/** What the manager needs. */
export interface ProberDeps {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  events?: EventSink;
  /** A result changed: sync this pod soon. */
  onChange(uid: string): void;
  random?: () => number;
}

type ProbeSpec = ProbeAction & {
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
};

interface Worker {
  uid: string;
  pod: Pod;
  container: Container;
  kind: ProbeKind;
  spec: ProbeSpec;
  state: ProbeState;
  running: boolean;
  startedAtMs: number;
  podIP: string;
  /** When the next run is due (on the monotonic clock). */
  due: number;
  inFlight: boolean;
  /** The container instance a readiness probe was triggered for. */
  triggeredFor?: string;
  cancel?: () => void;
}

const KIND_FIELD: Record<ProbeKind, 'livenessProbe' | 'readinessProbe' | 'startupProbe'> = {
  liveness: 'livenessProbe',
  readiness: 'readinessProbe',
  startup: 'startupProbe',
};
const KIND_NAME: Record<ProbeKind, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

/** Probe results by pod and container. */
export class ProberManager {
  private readonly workers = new Map<string, Worker>();
  /**
   * prober_probe_total: results counted by upstream's labels (probe_type, result, container, pod, namespace, pod_uid).
   */
  readonly counts = new Map<string, { labels: Record<string, string>; count: number }>();
  /** prober_probe_duration_seconds: how long successful probes took (upstream's ProberDuration, default buckets). */
  readonly durations = new Histogram(
    'prober_probe_duration_seconds',
    '[ALPHA] Duration in seconds for a probe response.',
    ['probe_type', 'container', 'pod', 'namespace'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );

  private readonly timers: CoalescedTimers;
  /** The manager's start on the monotonic clock (the first probes of a new kubelet are spread over a period). */
  private readonly startedAt: number;
  private readonly listeners: ((uid: string) => void)[] = [];

  constructor(private readonly deps: ProberDeps) {
    this.timers = new CoalescedTimers(deps.clock);
    this.startedAt = deps.clock.monotonic();
  }

  private key(uid: string, container: string, kind: ProbeKind) {
    return `${uid}/${container}/${kind}`;
  }

  /** Starts, updates or stops the workers of `pod` from its runtime status. */
  syncPod(pod: Pod, rs: PodRuntimeStatus, podIP: string): void {
    const uid = pod.metadata.uid!;
    const wanted = new Set<string>();
    const containers: Container[] = [
      ...pod.spec.containers,
      ...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'),
    ];
    for (const c of containers) {
      const inst = latestContainer(rs, c.name);
      for (const kind of ['startup', 'liveness', 'readiness'] as ProbeKind[]) {
        const spec = c[KIND_FIELD[kind]] as ProbeSpec | undefined;
        if (!spec) continue;
        const k = this.key(uid, c.name, kind);
        wanted.add(k);
        let w = this.workers.get(k);
        const t = probeTiming(spec, kind);
        if (!w) {
          const now = this.deps.clock.monotonic();
          const due = firstDue(now, this.startedAt, t.periodSeconds * 1000, (this.deps.random ?? Math.random)());
          w = {
            uid,
            pod,
            container: c,
            kind,
            spec,
            // A container already running when its worker starts (a kubelet restart) keeps what its last status said.
            state: resumedState(
              kind,
              inst?.state === 'running' ? inst.id : '',
              [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find(
                (s) => s.name === c.name,
              ),
            ),
            running: false,
            startedAtMs: 0,
            podIP,
            due,
            inFlight: false,
          };
          this.workers.set(k, w);
          this.schedule(w);
        }
        w.pod = pod;
        w.podIP = podIP;
        if (inst && inst.id !== w.state.containerId) w.state = initialState(kind, inst.id);
        w.running = inst?.state === 'running';
        w.startedAtMs = inst?.startedAt ?? 0;
        if (
          kind === 'readiness' &&
          w.running &&
          w.triggeredFor !== w.state.containerId &&
          w.state.lastRaw === undefined
        ) {
          // Upstream triggers a readiness probe at once for a running container that is not ready.
          w.triggeredFor = w.state.containerId;
          // (A run due before this one would fall within initialDelaySeconds: it is replaced.)
          w.cancel?.();
          const left = initialDelayLeftMs(w.startedAtMs, this.deps.clock.now(), t.initialDelaySeconds * 1000);
          w.due = this.deps.clock.monotonic() + left;
          this.schedule(w);
        }
      }
    }
    for (const [k, w] of this.workers) if (w.uid === uid && !wanted.has(k)) this.stop(k, w);
  }

  /**
   * Stops every worker of pod `uid` (or only those of `kinds`: upstream's StopLivenessAndStartup when a pod starts
   * stopping).
   */
  removePod(uid: string, kinds?: readonly ProbeKind[]): void {
    for (const [k, w] of this.workers) if (w.uid === uid && (!kinds || kinds.includes(w.kind))) this.stop(k, w);
  }

  /** Also tells `fn` of each changed result (the status of a pod whose worker is busy stopping it). */
  onResult(fn: (uid: string) => void): void {
    this.listeners.push(fn);
  }

  /** Stops a worker and forgets its metric series, as upstream's worker.stop. */
  private stop(k: string, w: Worker): void {
    w.cancel?.();
    this.workers.delete(k);
    const labels = this.seriesLabels(w);
    for (const result of ['successful', 'failed'])
      this.counts.delete(JSON.stringify({ ...labels, result, pod_uid: w.uid }));
    this.durations.delete(labels);
  }

  /** A worker's probe_type, container, pod and namespace labels. */
  private seriesLabels(w: Worker) {
    return {
      probe_type: KIND_NAME[w.kind],
      container: w.container.name,
      pod: w.pod.metadata.name ?? '',
      namespace: w.pod.metadata.namespace ?? '',
    };
  }

  private result(uid: string, container: string, kind: ProbeKind, containerId: string): ProbeResult | undefined {
    const w = this.workers.get(this.key(uid, container, kind));
    return w && w.state.containerId === containerId ? w.state.result : undefined;
  }

  /** The probe results the status and the restart decision read (undefined: no such probe). */
  results(uid: string): {
    readiness(name: string, id: string): ProbeResult | undefined;
    liveness(name: string, id: string): ProbeResult | undefined;
    startup(name: string, id: string): ProbeResult | undefined;
  } {
    return {
      readiness: (n, id) => this.result(uid, n, 'readiness', id),
      liveness: (n, id) => this.result(uid, n, 'liveness', id),
      startup: (n, id) => this.result(uid, n, 'startup', id),
    };
  }

  private schedule(w: Worker): void {
    w.cancel = this.timers.at(w.due, () => {
      void this.tick(w);
    });
  }

  private async tick(w: Worker): Promise<void> {
    if (this.workers.get(this.key(w.uid, w.container.name, w.kind)) !== w) return;
    const t = probeTiming(w.spec, w.kind);
    w.due = nextDue(w.due, this.deps.clock.monotonic(), t.periodSeconds * 1000);
    this.schedule(w);
    if (w.inFlight) return;
    w.inFlight = true;
    try {
      await this.probeOnce(w, t);
    } catch (err) {
      this.deps.logger.warn({ err: String(err) }, 'probe failed unexpectedly');
    } finally {
      w.inFlight = false;
    }
  }

  private async probeOnce(w: Worker, t: ReturnType<typeof probeTiming>): Promise<void> {
    // Probing a container that is not running never runs the handler.
    if (!w.running || !w.state.containerId || w.state.onHold) return;
    if (initialDelayLeftMs(w.startedAtMs, this.deps.clock.now(), t.initialDelaySeconds * 1000) > 0) return;
    if (
      w.kind !== 'startup' &&
      w.container.startupProbe &&
      this.result(w.uid, w.container.name, 'startup', w.state.containerId) !== 'success'
    )
      return;
    const containerId = w.state.containerId;
    const t0 = performance.now();
    const out = await runProbeAction(w.spec, {
      runtime: this.deps.runtime,
      containerId,
      container: w.container,
      podIP: w.podIP,
      timeoutMs: t.timeoutSeconds * 1000,
    });
    // A worker stopped while its probe ran is gone with its series (upstream's worker records before it stops).
    if (this.workers.get(this.key(w.uid, w.container.name, w.kind)) !== w) return;
    const series = this.seriesLabels(w);
    if (out.result === 'success') this.durations.observe(series, (performance.now() - t0) / 1000);
    const labels = { ...series, result: out.result === 'success' ? 'successful' : 'failed', pod_uid: w.uid };
    const countKey = JSON.stringify(labels);
    const entry = this.counts.get(countKey) ?? { labels, count: 0 };
    entry.count++;
    this.counts.set(countKey, entry);
    if (w.state.containerId !== containerId) return;
    if (out.warning) {
      // Upstream records a warning (a redirect to another host) and counts the probe a success.
      this.deps.events?.record(
        podRef(w.pod, { name: w.container.name }),
        'Warning',
        'ProbeWarning',
        `${KIND_NAME[w.kind]} probe warning: ${out.output}`.slice(0, 1024),
      );
    }
    if (out.result === 'failure') {
      this.deps.events?.record(
        podRef(w.pod, { name: w.container.name }),
        'Warning',
        'Unhealthy',
        `${KIND_NAME[w.kind]} probe failed: ${out.output.trim()}`.slice(0, 1024),
      );
    }
    const before = w.state.result;
    w.state = nextState(w.state, out.result, {
      kind: w.kind,
      successThreshold: t.successThreshold,
      failureThreshold: t.failureThreshold,
    });
    if (w.state.result === before) return;
    // Started: its readiness is probed now, not a readiness period later (upstream's UpdatePodStatus
    // triggers the readiness worker of a started container that is not ready).
    if (w.kind === 'startup' && w.state.result === 'success')
      this.probeNow(this.workers.get(this.key(w.uid, w.container.name, 'readiness')));
    this.deps.onChange(w.uid);
    for (const l of this.listeners) l(w.uid);
  }

  /** Runs worker `w` at once (its next runs follow from then), unless it is absent or already running. */
  private probeNow(w: Worker | undefined): void {
    if (!w || w.inFlight) return;
    w.cancel?.();
    w.due = this.deps.clock.monotonic();
    this.schedule(w);
  }
}
