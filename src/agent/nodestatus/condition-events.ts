/**
 * The Node events a pressure condition's change records (upstream's MemoryPressureCondition, DiskPressureCondition and
 * PIDPressureCondition setters): each time the kubelet sets one to a status the Node did not have — a new Node's
 * first report included — a Normal event `Node <name> status is now: <reason>`, what `kubectl describe node` lists.
 * Pure.
 */
import type { NodeCondition } from './node-object.js';

/** The reason for each pressure condition's status: [False, True]. */
const REASONS: Record<string, [string, string]> = {
  MemoryPressure: ['NodeHasSufficientMemory', 'NodeHasInsufficientMemory'],
  DiskPressure: ['NodeHasNoDiskPressure', 'NodeHasDiskPressure'],
  PIDPressure: ['NodeHasSufficientPID', 'NodeHasInsufficientPID'],
};

/** The event reasons for the pressure conditions of `after` whose status differs from `before`'s (the Node's). */
export function pressureConditionEvents(
  before: readonly NodeCondition[] | undefined,
  after: readonly NodeCondition[],
): string[] {
  const out: string[] = [];
  for (const [type, [sufficient, insufficient]] of Object.entries(REASONS)) {
    const now = after.find((c) => c.type === type)?.status;
    if (now !== 'True' && now !== 'False') continue;
    if (before?.find((c) => c.type === type)?.status === now) continue;
    out.push(now === 'True' ? insufficient : sufficient);
  }
  return out;
}
