/**
 * When a probe worker runs, pure (upstream prober/worker.go run, plus a grid):
 *
 *   first run: within one period at random while the kubelet started less than a period ago
 *              (a restarted kubelet must not fire every probe at once, as upstream), else now
 *   then:      every periodSeconds at a fixed rate (a tick that is already past is dropped, as
 *              Go's time.Ticker drops it), each due time rounded up to a grid of a tenth of the
 *              period (100 ms – 1 s)
 *
 * The grid is why: waking a process from idle costs more CPU than the probe itself on a small
 * VM (measured ~0.2 ms per wake-up of Node against ~1 ms per probe); probes that share a grid
 * point share one wake-up, and their I/O completions mostly share the following ones. With 200
 * probes at periodSeconds 10, each grid point carries ~20 of them.
 */

/** The grid step for a period: a tenth of it, between 100 ms and 1 s. */
export function probeGridMs(periodMs: number): number {
  return Math.min(1000, Math.max(100, Math.floor(periodMs / 10)));
}

function onGrid(ms: number, gridMs: number): number {
  return Math.ceil(ms / gridMs) * gridMs;
}

/** The first due time of a new worker. `random` is in [0, 1). */
export function firstDue(now: number, kubeletStartMs: number, periodMs: number, random: number): number {
  return now - kubeletStartMs < periodMs ? onGrid(now + random * periodMs, probeGridMs(periodMs)) : now;
}

/**
 * What is left of a container's initialDelaySeconds at `nowMs`. Both times are wall times (the start is the
 * runtime's). A start after now means the wall clock was stepped back since: the delay cannot be told, and none is
 * left (upstream's negative time.Since skips every probe until the wall clock has caught up, an hour for an hour's
 * step).
 */
export function initialDelayLeftMs(startedAtMs: number, nowMs: number, delayMs: number): number {
  return nowMs < startedAtMs ? 0 : Math.max(0, startedAtMs + delayMs - nowMs);
}

/** The due time after the one at `prevDue`, never in the past. */
export function nextDue(prevDue: number, now: number, periodMs: number): number {
  let due = prevDue + periodMs;
  if (due <= now) due += Math.ceil((now - due + 1) / periodMs) * periodMs;
  return onGrid(due, probeGridMs(periodMs));
}
