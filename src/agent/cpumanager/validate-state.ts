/**
 * The static policy's check of a state read at start (upstream staticPolicy.validateState): an
 * empty state starts with every CPU shared (but the reserved ones with strict-cpu-reservation);
 * otherwise the reserved CPUs must be shared (must not be, with strict-cpu-reservation), no
 * exclusive assignment may overlap the shared pool, and together (with the strictly reserved
 * CPUs) they must be exactly this machine's CPUs. Throws upstream's messages. Pure.
 */
import { difference, equalSets, formatCpuSet, intersection, union, type CpuSet } from '../../lib/cpuset.js';
import type { CpuManagerState } from './checkpoint.js';

/** `s` checked (or, empty, initialized) against the reserved CPUs and the machine's `all`. */
export function validateStaticState(
  s: CpuManagerState,
  reserved: CpuSet,
  all: CpuSet,
  strictReservation = false,
): CpuManagerState {
  const assigned = [...s.entries].flatMap(([pod, cs]) => [...cs].map(([name, set]) => ({ pod, name, set })));
  if (!s.defaultCpuSet.length) {
    if (assigned.length) throw new Error('default cpuset cannot be empty');
    return { ...s, defaultCpuSet: strictReservation ? difference(all, reserved) : all };
  }
  const reservedShared = intersection(reserved, s.defaultCpuSet);
  if (strictReservation && reservedShared.length)
    throw new Error(
      `some of strictly reserved cpus: "${formatCpuSet(reservedShared)}" are present in defaultCpuSet: "${formatCpuSet(s.defaultCpuSet)}"`,
    );
  if (!strictReservation && !equalSets(reservedShared, reserved))
    throw new Error(
      `not all reserved cpus: "${formatCpuSet(reserved)}" are present in defaultCpuSet: "${formatCpuSet(s.defaultCpuSet)}"`,
    );
  for (const a of assigned)
    if (intersection(s.defaultCpuSet, a.set).length)
      throw new Error(
        `pod: ${a.pod}, container: ${a.name} cpuset: "${formatCpuSet(a.set)}" overlaps with default cpuset "${formatCpuSet(s.defaultCpuSet)}"`,
      );
  const known = union(s.defaultCpuSet, ...assigned.map((a) => a.set), ...(strictReservation ? [reserved] : []));
  if (!equalSets(known, all))
    throw new Error(
      `current set of available CPUs "${formatCpuSet(all)}" doesn't match with CPUs in state "${formatCpuSet(known)}"`,
    );
  return s;
}
