/**
 * A set of logical CPU IDs in the kernel's list format (`0-3,7`), as k8s.io/utils/cpuset: parsed
 * with upstream's errors (`strconv.Atoi: parsing "1.3": invalid syntax`), printed sorted with
 * ranges. Immutable values are plain sorted arrays. Pure.
 */
import { goAtoi } from './go-strconv.js';

/** A sorted, duplicate-free list of CPU IDs. */
export type CpuSet = readonly number[];

/** Above this a CPU ID is not believed (a bound on what one list can expand to). */
const MAX_CPU = 16384;

export const cpuSet = (ids: Iterable<number>): CpuSet => [...new Set(ids)].sort((a, b) => a - b);

/** Parses `0-3,7`; "" is the empty set. Throws upstream's message on a malformed list. */
export function parseCpuSet(text: string): CpuSet {
  const out = new Set<number>();
  if (text.trim() === '') return [];
  for (const r of text.trim().split(',')) {
    const bounds = r.split('-');
    if (bounds.length === 1) out.add(goAtoi(bounds[0]));
    else if (bounds.length === 2) {
      const [lo, hi] = [goAtoi(bounds[0]), goAtoi(bounds[1])];
      if (lo > hi) throw new Error(`invalid range: ${r} (${lo} > ${hi})`);
      if (hi > MAX_CPU) throw new Error(`invalid range: ${r} (above ${MAX_CPU})`);
      for (let i = lo; i <= hi; i++) out.add(i);
    } else throw new Error(`invalid range: ${r}`);
  }
  return cpuSet(out);
}

/** `0-3,7`. */
export function formatCpuSet(s: CpuSet): string {
  const parts: string[] = [];
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    parts.push(j === i ? `${s[i]}` : `${s[i]}-${s[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export const union = (...sets: CpuSet[]): CpuSet => cpuSet(sets.flat());
export const difference = (a: CpuSet, b: CpuSet): CpuSet => a.filter((x) => !b.includes(x));
export const intersection = (a: CpuSet, b: CpuSet): CpuSet => a.filter((x) => b.includes(x));
export const equalSets = (a: CpuSet, b: CpuSet): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
