/** The eviction thresholds of a KubeletConfiguration (hard and soft), checked as upstream's ParseThresholdConfig. */
import { parseDuration } from '../lib/duration.js';
import { parseThresholds, withAllocatableThresholds, type Threshold } from '../agent/eviction/signals.js';
import type { KubeletConfiguration } from './schema.js';

/**
 * evictionHard and evictionSoft (each soft one with its grace period), and the allocatable memory thresholds when
 * `enforceNodeAllocatable` has `pods`; throws naming what is wrong.
 */
export function evictionThresholds(
  kc: Pick<
    KubeletConfiguration,
    'evictionHard' | 'evictionSoft' | 'evictionSoftGracePeriod' | 'evictionMaxPodGracePeriod' | 'evictionMinimumReclaim'
  > &
    Partial<Pick<KubeletConfiguration, 'enforceNodeAllocatable'>>,
): Threshold[] {
  const reclaim = new Map(
    parseThresholds(kc.evictionMinimumReclaim, 'evictionMinimumReclaim').map((t) => [
      t.signal,
      { quantity: t.quantity, fraction: t.fraction },
    ]),
  );
  const withReclaim = (t: Threshold): Threshold =>
    reclaim.has(t.signal) ? { ...t, minReclaim: reclaim.get(t.signal) } : t;
  const hard = parseThresholds(kc.evictionHard);
  const soft = parseThresholds(kc.evictionSoft, 'evictionSoft').map((t) => {
    const raw = kc.evictionSoftGracePeriod[t.signal];
    if (raw === undefined)
      throw new Error(`grace period must be specified for the soft eviction threshold ${t.signal}`);
    const graceMs = parseDuration(raw);
    if (graceMs === undefined || graceMs < 0)
      throw new Error(`evictionSoftGracePeriod: invalid duration ${JSON.stringify(raw)} for ${t.signal}`);
    return { ...t, graceMs };
  });
  for (const s of Object.keys(kc.evictionSoftGracePeriod))
    if (!(s in kc.evictionSoft))
      throw new Error(`evictionSoftGracePeriod: no soft eviction threshold for ${JSON.stringify(s)}`);
  if (kc.evictionMaxPodGracePeriod < 0) throw new Error('evictionMaxPodGracePeriod must not be negative');
  const thresholds = [...hard, ...soft].map(withReclaim);
  return kc.enforceNodeAllocatable?.includes('pods') ? withAllocatableThresholds(thresholds) : thresholds;
}
