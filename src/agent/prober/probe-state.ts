/**
 * One probe worker's result state machine (upstream prober/worker.go doProbe), pure:
 *
 *   initial: readiness Failure, liveness Success, startup Unknown
 *   each probe result r:  same as the last → run+1, else run = 1
 *                          r = Failure and run < failureThreshold → result unchanged
 *                          r = Success and run < successThreshold → result unchanged
 *                          else → result = r
 *   liveness/startup turning Failure → on hold (no more probes) until the container is replaced
 *   a new container instance → back to the initial state
 */

/** The kinds of probes. */
export type ProbeKind = 'liveness' | 'readiness' | 'startup';
/** A probe's verdict. */
export type ProbeResult = 'success' | 'failure' | 'unknown';

/** The worker's state for one container instance. */
export interface ProbeState {
  containerId: string;
  result: ProbeResult;
  lastRaw?: 'success' | 'failure';
  run: number;
  onHold: boolean;
}

/** The state of a fresh container instance (upstream initial values). */
export function initialState(kind: ProbeKind, containerId: string): ProbeState {
  return {
    containerId,
    result: kind === 'readiness' ? 'failure' : kind === 'liveness' ? 'success' : 'unknown',
    run: 0,
    onHold: false,
  };
}

/**
 * The first state of a worker for a container the kubelet finds already running (a kubelet
 * restart): what the pod's last reported status said of that very container carries on — ready
 * stays ready, started stays started — until a probe says otherwise (upstream's worker
 * initialization with ChangeContainerStatusOnKubeletRestart off, its v1.36 default). Pure.
 */
export function resumedState(
  kind: ProbeKind,
  containerId: string,
  reported: { containerID?: string; ready?: boolean; started?: boolean } | undefined,
): ProbeState {
  const state = initialState(kind, containerId);
  if (!containerId || !reported?.containerID?.endsWith(`://${containerId}`)) return state;
  if (kind === 'readiness' && reported.ready) return { ...state, result: 'success' };
  if (kind === 'startup' && reported.started) return { ...state, result: 'success' };
  return state;
}

/** The state after one probe returned `raw`. */
export function nextState(
  s: ProbeState,
  raw: 'success' | 'failure',
  o: { kind: ProbeKind; successThreshold: number; failureThreshold: number },
): ProbeState {
  const run = s.lastRaw === raw ? s.run + 1 : 1;
  const next: ProbeState = { ...s, lastRaw: raw, run };
  if ((raw === 'failure' && run < o.failureThreshold) || (raw === 'success' && run < o.successThreshold)) return next;
  next.result = raw;
  if (raw === 'failure' && (o.kind === 'liveness' || o.kind === 'startup')) {
    next.onHold = true;
    next.run = 0;
    next.lastRaw = undefined;
  }
  return next;
}

/** Upstream defaults of a probe's numbers (API defaulting). */
export function probeTiming(
  p: {
    initialDelaySeconds?: number;
    periodSeconds?: number;
    timeoutSeconds?: number;
    successThreshold?: number;
    failureThreshold?: number;
  },
  kind: ProbeKind,
) {
  return {
    initialDelaySeconds: p.initialDelaySeconds ?? 0,
    periodSeconds: p.periodSeconds || 10,
    timeoutSeconds: p.timeoutSeconds || 1,
    // Liveness and startup probes must have successThreshold 1 (API validation).
    successThreshold: kind === 'readiness' ? p.successThreshold || 1 : 1,
    failureThreshold: p.failureThreshold || 3,
  };
}
