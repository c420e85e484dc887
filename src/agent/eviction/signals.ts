/**
 * Eviction signals and hard thresholds (upstream pkg/kubelet/eviction: helpers.go), pure:
 * `evictionHard` parsed (`memory.available: 100Mi`, `nodefs.available: 10%`…), the signals
 * observed in a stats snapshot, which thresholds are met, and the node conditions they raise —
 * kept for `evictionPressureTransitionPeriod` after the last time they were met, as upstream.
 */
import { bytes, parseQuantity } from '../../api/quantity.js';
import type { StatsSnapshot } from '../stats/samples.js';

export type Signal =
  | 'memory.available'
  | 'allocatableMemory.available'
  | 'nodefs.available'
  | 'nodefs.inodesFree'
  | 'imagefs.available'
  | 'imagefs.inodesFree'
  | 'containerfs.available'
  | 'containerfs.inodesFree'
  | 'pid.available';
export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';
/** The resource a signal is about, as upstream's messages name it. */
export type Resource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

const SIGNALS: Record<Signal, { condition: PressureCondition; resource: Resource }> = {
  'memory.available': { condition: 'MemoryPressure', resource: 'memory' },
  'allocatableMemory.available': { condition: 'MemoryPressure', resource: 'memory' },
  'nodefs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'nodefs.inodesFree': { condition: 'DiskPressure', resource: 'inodes' },
  'imagefs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'imagefs.inodesFree': { condition: 'DiskPressure', resource: 'inodes' },
  'containerfs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'containerfs.inodesFree': { condition: 'DiskPressure', resource: 'inodes' },
  'pid.available': { condition: 'PIDPressure', resource: 'pids' },
};

/** A hard threshold: the signal is met when what is available falls below the value. */
export interface Threshold {
  signal: Signal;
  /** An absolute value (bytes, inodes, pids), or */
  quantity?: number;
  /** a fraction of the capacity. */
  fraction?: number;
  /** As written (`100Mi`, `10%`), for messages. */
  raw: string;
  /** A soft threshold's grace period: it must be met this long before a pod is evicted (hard: none). */
  graceMs?: number;
  /** evictionMinimumReclaim: once met, the threshold stays met until this much more is available. */
  minReclaim?: { quantity?: number; fraction?: number };
}

/** What is available and the capacity, for a signal. */
export interface Observation {
  available: number;
  capacity: number;
}

export const conditionOf = (s: Signal): PressureCondition => SIGNALS[s].condition;
export const resourceOf = (s: Signal): Resource => SIGNALS[s].resource;

/** A percentage as upstream's ParsePercentage holds it: a float32 fraction (10 % is 0.100000001…). */
const percentFraction = (percent: number): number => Math.fround(Math.fround(percent) / 100);

/** `fraction` of `capacity`, truncated to a whole number as upstream's GetThresholdQuantity. */
const fractionOf = (fraction: number, capacity: number): number => Math.trunc(capacity * fraction);

/**
 * A threshold's value in bytes against `capacity` (upstream GetThresholdQuantity): a quantity, or a
 * percentage of the capacity as upstream holds it, a float32 fraction, truncated to whole bytes.
 * 0 when unset or unreadable.
 */
export function thresholdBytes(value: string | undefined, capacity: number): number {
  const v = value?.trim();
  if (!v) return 0;
  if (!v.endsWith('%')) return bytes(v) ?? 0;
  const percent = Number(v.slice(0, -1));
  return Number.isFinite(percent) ? fractionOf(percentFraction(percent), capacity) : 0;
}

/**
 * Parses evictionHard; throws naming the entry for an unknown signal or an unreadable value. `0%` / `0` disable a
 * threshold, as upstream.
 */
export function parseThresholds(m: Record<string, string>, field = 'evictionHard'): Threshold[] {
  const out: Threshold[] = [];
  for (const [signal, raw] of Object.entries(m)) {
    if (!(signal in SIGNALS)) throw new Error(`${field}: unknown signal ${JSON.stringify(signal)}`);
    const v = raw.trim();
    if (v.endsWith('%')) {
      const pct = Number(v.slice(0, -1));
      if (!Number.isFinite(pct) || pct < 0 || pct > 100)
        throw new Error(`${field}: invalid percentage ${JSON.stringify(raw)} for ${signal}`);
      if (pct > 0) out.push({ signal: signal as Signal, fraction: percentFraction(pct), raw: v });
      continue;
    }
    const q = parseQuantity(v);
    if (q === undefined || q < 0) throw new Error(`${field}: invalid quantity ${JSON.stringify(raw)} for ${signal}`);
    if (q > 0) out.push({ signal: signal as Signal, quantity: q, raw: v });
  }
  return out;
}

/** The signals a snapshot shows (those it has figures for). */
export function observe(s: StatsSnapshot, memoryCapacityBytes: number): Map<Signal, Observation> {
  const out = new Map<Signal, Observation>();
  const mem = s.node.memory as { available?: number };
  if (mem.available !== undefined)
    out.set('memory.available', { available: mem.available, capacity: memoryCapacityBytes });
  const fsObs = (f: StatsSnapshot['node']['fs'], bytesSignal: Signal, inodesSignal: Signal) => {
    if (!f) return;
    out.set(bytesSignal, { available: f.availableBytes, capacity: f.capacityBytes });
    if (f.inodes > 0) out.set(inodesSignal, { available: f.inodesFree, capacity: f.inodes });
  };
  // What the pods may still use under their cgroup's limit, Node Allocatable (upstream: the `pods` system container).
  const pods = s.podsCgroup;
  if (pods?.limit !== undefined)
    out.set('allocatableMemory.available', {
      available: Math.max(0, pods.limit - pods.workingSet),
      capacity: pods.limit,
    });
  fsObs(s.node.fs, 'nodefs.available', 'nodefs.inodesFree');
  fsObs(s.node.imageFs, 'imagefs.available', 'imagefs.inodesFree');
  fsObs(s.node.containerFs, 'containerfs.available', 'containerfs.inodesFree');
  if (s.node.rlimit.maxpid > 0)
    out.set('pid.available', {
      available: s.node.rlimit.maxpid - s.node.rlimit.curproc,
      capacity: s.node.rlimit.maxpid,
    });
  return out;
}

/**
 * With Node Allocatable enforced on the pods (`enforceNodeAllocatable` has `pods`), each hard `memory.available`
 * threshold is also one on `allocatableMemory.available` (upstream addAllocatableThresholds): the pods are evicted
 * before their cgroup's limit makes the kernel kill one.
 */
export function withAllocatableThresholds(thresholds: readonly Threshold[]): Threshold[] {
  const allocatable = thresholds
    .filter((t) => t.signal === 'memory.available' && t.graceMs === undefined)
    .map((t): Threshold => ({ ...t, signal: 'allocatableMemory.available' }));
  return [...thresholds, ...allocatable];
}

/** The threshold's value against a capacity. */
export function thresholdValue(t: Threshold, capacity: number): number {
  return t.quantity ?? fractionOf(t.fraction ?? 0, capacity);
}

/**
 * The thresholds met by the observations (a signal not observed meets nothing). Those in
 * `stillMet` (met last time) stay met until their minimum reclaim is available too, as upstream.
 */
export function thresholdsMet(
  thresholds: Threshold[],
  obs: ReadonlyMap<Signal, Observation>,
  stillMet: readonly Threshold[] = [],
): Threshold[] {
  return thresholds.filter((t) => {
    const o = obs.get(t.signal);
    if (o === undefined) return false;
    const reclaim =
      stillMet.includes(t) && t.minReclaim
        ? (t.minReclaim.quantity ?? fractionOf(t.minReclaim.fraction ?? 0, o.capacity))
        : 0;
    return o.available < thresholdValue(t, o.capacity) + reclaim;
  });
}

/**
 * The node conditions under pressure at `nowMs`: those a met threshold raises now, and those
 * raised within the last `transitionMs` (`lastMet` remembers when each was last raised; updated here).
 */
export function pressureConditions(
  met: Threshold[],
  lastMet: Map<PressureCondition, number>,
  nowMs: number,
  transitionMs: number,
): Set<PressureCondition> {
  for (const t of met) lastMet.set(conditionOf(t.signal), nowMs);
  const out = new Set<PressureCondition>();
  for (const [c, at] of lastMet) {
    if (nowMs - at < transitionMs || met.some((t) => conditionOf(t.signal) === c)) out.add(c);
    else lastMet.delete(c);
  }
  return out;
}
