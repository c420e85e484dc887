/**
 * PodConfig: runs the pod sources, merges each snapshot (merge.ts) and publishes the resulting
 * updates in upstream order (REMOVE, ADD, UPDATE, RECONCILE). Knows when every source has
 * delivered its first snapshot (`allSourcesSeen`), which gates orphan cleanup.
 */
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import type { Clock } from '../../lib/clock.js';
import { mergeSnapshot } from './merge.js';
import type { PodSource, PodUpdate } from './types.js';

/** What PodConfig needs. */
export interface PodConfigDeps {
  sources: PodSource[];
  logger: Logger;
  clock: Clock;
}

/** Merges sources into one update stream. */
export class PodConfig {
  private readonly state = new Map<string, Map<string, Pod>>();
  private readonly seen = new Set<string>();
  private listeners: ((u: PodUpdate) => void)[] = [];

  constructor(private readonly deps: PodConfigDeps) {}

  /** Subscribes to updates; call before `start`. */
  onUpdate(fn: (u: PodUpdate) => void): void {
    this.listeners.push(fn);
  }

  /** Starts every source. */
  start({ signal }: { signal: AbortSignal }): void {
    for (const src of this.deps.sources) src.start({ signal, emit: (pods) => this.apply(src.name, pods) });
  }

  /** True once every source has sent a snapshot. */
  allSourcesSeen(): boolean {
    return this.deps.sources.every((s) => this.seen.has(s.name));
  }

  /** Merges one snapshot of `source` and publishes the changes. */
  apply(source: string, pods: Pod[]): void {
    const prev = this.state.get(source) ?? new Map<string, Pod>();
    const seenAt = new Date(this.deps.clock.now()).toISOString().replace('Z', '000000Z');
    const r = mergeSnapshot(prev, pods, source, seenAt);
    for (const e of r.errors) this.deps.logger.warn({ source }, e);
    this.state.set(source, r.next);
    this.seen.add(source);
    const emit = (op: PodUpdate['op'], list: Pod[]) => {
      if (list.length) for (const l of this.listeners) l({ op, source, pods: list });
    };
    emit('REMOVE', r.removes);
    emit('ADD', r.adds);
    emit('UPDATE', r.updates);
    emit('RECONCILE', r.reconciles);
  }
}
