/** Timestamps in the formats Kubernetes uses. */

/** RFC3339 with second precision, UTC ("2025-01-01T00:00:00Z"): metav1.Time. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** RFC3339Nano in UTC with trailing zeros trimmed, from nanoseconds since the epoch. */
export function rfc3339NanoFromNs(ns: bigint): string {
  const ms = Number(ns / 1_000_000n);
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  const base = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);
  return frac ? `${base}.${frac}Z` : `${base}Z`;
}

/** Farther apart than this, the wall clock was stepped (or slewed that far): the anchor follows it. */
const REANCHOR_NS = 50_000_000n;
let anchorHr = process.hrtime.bigint();
let anchorWallNs = BigInt(Date.now()) * 1_000_000n;

/**
 * Wall-clock nanoseconds with sub-millisecond resolution: the monotonic clock's offset from an anchor on the wall
 * clock, re-anchored once they are more than 50 ms apart. The embedded runtime's timestamps (log lines, container
 * starts and exits) follow a wall clock that NTP or an operator stepped, as containerd's time.Now does; anchored
 * once at start, they stayed off by the step for the process's life (and a container's exit, seen an hour early,
 * escaped its crash-loop back-off).
 */
export function nowNs(): bigint {
  const hr = process.hrtime.bigint();
  const ns = anchorWallNs + (hr - anchorHr);
  const wallNs = BigInt(Date.now()) * 1_000_000n;
  if (ns - wallNs > REANCHOR_NS || wallNs - ns > REANCHOR_NS) {
    anchorHr = hr;
    anchorWallNs = wallNs;
    return wallNs;
  }
  return ns;
}

/** Parses RFC3339 / RFC3339Nano into nanoseconds since the epoch; undefined when malformed. */
export function parseRfc3339Ns(text: string): bigint | undefined {
  // As Go's time.Parse(RFC3339): any number of fraction digits (beyond nanoseconds they are dropped).
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return undefined;
  const secMs = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(secMs)) return undefined;
  const frac = BigInt((m[2] ?? '').slice(0, 9).padEnd(9, '0') || '0');
  return BigInt(secMs) * 1_000_000n + frac;
}
