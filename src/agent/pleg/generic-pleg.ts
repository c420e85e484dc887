/**
 * The generic PLEG: relists the runtime every `periodMs` and reports which pods changed
 * (a sandbox or container appeared, changed state or vanished). Upstream's event kinds are
 * reduced to "this pod changed"; the pod worker reads the fresh status itself.
 */
import type * as cri from '../../cri/types.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { PodUidLabel } from '../runtime/labels.js';
import type { RuntimeLists } from '../runtime/pod-lists.js';

/** A pod lifecycle event. */
export interface PlegEvent {
  uid: string;
  type: 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged' | 'SandboxChanged';
}

/** Computes events between two relists (pure): keys are `<uid>|<kind>|<id>` → state. */
export function diffRelist(prev: ReadonlyMap<string, string>, next: ReadonlyMap<string, string>): PlegEvent[] {
  const out = new Map<string, PlegEvent>();
  const typeOf = (kind: string, before: string | undefined, after: string | undefined): PlegEvent['type'] => {
    if (kind === 's') return 'SandboxChanged';
    if (after === undefined) return 'ContainerRemoved';
    if (after === 'CONTAINER_RUNNING') return 'ContainerStarted';
    if (after === 'CONTAINER_EXITED') return 'ContainerDied';
    return before === undefined ? 'ContainerChanged' : 'ContainerChanged';
  };
  for (const key of new Set([...prev.keys(), ...next.keys()])) {
    const a = prev.get(key);
    const b = next.get(key);
    if (a === b) continue;
    const [uid, kind] = key.split('|');
    if (!out.has(uid) || kind === 'c') out.set(uid, { uid, type: typeOf(kind, a, b) });
  }
  return [...out.values()];
}

/**
 * Whether `next` is the very list `prev` was, frozen: the CRI client answers an unfiltered list
 * with the last answer's (frozen) array when no item is new, changed or gone
 * (cri/reused-list-items.ts), so on a settled node a relist has nothing to compare. Pure.
 */
export function unchangedList(prev: readonly object[], next: readonly object[]): boolean {
  return prev === next && Object.isFrozen(next);
}

/** What the PLEG needs. */
export interface PlegDeps {
  /** Every sandbox and container in the runtime, listed now (RuntimeManager.listAll). */
  listAll(): Promise<RuntimeLists>;
  clock: Clock;
  logger: Logger;
  periodMs: number;
  /** After each relist: how long it took and the time since the previous one started (ms), for metrics. */
  onRelist?(durationMs: number, intervalMs: number | undefined): void;
}

/** Relist loop. */
export class GenericPleg {
  private last = new Map<string, string>();
  private lastLists: RuntimeLists = { sandboxes: [], containers: [] };
  private listeners: ((e: PlegEvent) => void)[] = [];
  private lastRelistMs = 0;

  constructor(private readonly deps: PlegDeps) {}

  /** Subscribes to events. */
  onEvent(fn: (e: PlegEvent) => void): void {
    this.listeners.push(fn);
  }

  /** When the last relist finished (the clock's monotonic ms), for health checks. */
  lastRelistAt(): number {
    return this.lastRelistMs;
  }

  /** From the last relist: pods with a ready sandbox, and containers by state (running, exited, created, unknown). */
  runningCounts(): { pods: number; containers: Record<string, number> } {
    const pods = new Set<string>();
    const containers: Record<string, number> = {};
    for (const [key, state] of this.last) {
      const [uid, kind] = key.split('|');
      if (kind === 's' && state === 'SANDBOX_READY') pods.add(uid);
      if (kind === 'c') {
        const st = state.replace('CONTAINER_', '').toLowerCase();
        containers[st] = (containers[st] ?? 0) + 1;
      }
    }
    return { pods: pods.size, containers };
  }

  private lastStartMs: number | undefined;

  /** One relist; returns the events it emitted. */
  async relist(): Promise<PlegEvent[]> {
    const startMs = this.deps.clock.monotonic();
    const interval = this.lastStartMs === undefined ? undefined : startMs - this.lastStartMs;
    this.lastStartMs = startMs;
    const { sandboxes, containers } = await this.deps.listAll();
    const unchanged =
      unchangedList(this.lastLists.sandboxes, sandboxes) && unchangedList(this.lastLists.containers, containers);
    this.lastLists = { sandboxes, containers };
    const events = unchanged ? [] : this.changes(sandboxes, containers);
    this.lastRelistMs = this.deps.clock.monotonic();
    this.deps.onRelist?.(this.lastRelistMs - startMs, interval);
    for (const e of events) for (const l of this.listeners) l(e);
    return events;
  }

  /** The events between the last relist's states and these lists' (which become the last). */
  private changes(sandboxes: readonly cri.PodSandbox[], containers: readonly cri.Container[]): PlegEvent[] {
    const next = new Map<string, string>();
    for (const s of sandboxes) {
      const uid = s.labels[PodUidLabel];
      if (uid) next.set(`${uid}|s|${s.id}`, s.state);
    }
    for (const c of containers) {
      const uid = c.labels[PodUidLabel];
      if (uid) next.set(`${uid}|c|${c.id}`, c.state);
    }
    const events = diffRelist(this.last, next);
    this.last = next;
    return events;
  }

  /** Starts relisting until `signal` aborts. */
  start({ signal }: { signal: AbortSignal }): void {
    let failing = false;
    const tick = async () => {
      if (signal.aborted) return;
      try {
        await this.relist();
        failing = false;
      } catch (err) {
        if (!failing) this.deps.logger.warn({ err: messageOf(err) }, 'PLEG relist failed');
        failing = true;
      }
      if (!signal.aborted) this.deps.clock.setTimer(() => void tick(), this.deps.periodMs);
    };
    void tick();
  }
}
