/**
 * When the kubelet reports an unchanged node status (upstream kubelet_node_status.go with node
 * leases): at once when it changed or was never reported; else once nodeStatusReportFrequency has
 * passed since the last report, plus the one-time random delay drawn after a report that a change
 * (or the kubelet's start) caused — uniform over ±half the frequency, so that a fleet of kubelets
 * restarted together does not report in step. After an unchanged report the delay is 0. Pure.
 */

/** Whether the status is to be reported now. */
export function statusReportDue(o: {
  changed: boolean;
  /** Now and the last report on the monotonic clock: a wall clock stepped back does not hold reports back. */
  nowMs: number;
  /** Undefined: never reported. */
  lastReportMs: number | undefined;
  frequencyMs: number;
  delayMs: number;
}): boolean {
  if (o.changed || o.lastReportMs === undefined || o.frequencyMs <= 0) return true;
  return o.nowMs - o.lastReportMs >= o.frequencyMs + o.delayMs;
}

/** The delay added to the next interval after a report: random for one a change caused, else 0. */
export function delayAfterReport(causedByChange: boolean, frequencyMs: number, random: () => number): number {
  return causedByChange ? Math.round(frequencyMs * (random() - 0.5)) : 0;
}
