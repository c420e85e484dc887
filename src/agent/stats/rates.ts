/** Cumulative counters into rates (pure): usageNanoCores from two samples of CPU nanoseconds. */

/** ns of CPU per second of wall time between two samples, or undefined without a usable previous sample. */
export function nanoCores(
  prev: { cpuNs: number; atMs: number } | undefined,
  cur: { cpuNs: number; atMs: number },
): number | undefined {
  if (!prev || cur.atMs <= prev.atMs || cur.cpuNs < prev.cpuNs) return undefined;
  return Math.round(((cur.cpuNs - prev.cpuNs) * 1000) / (cur.atMs - prev.atMs));
}
