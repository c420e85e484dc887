/**
 * Upstream's graceful node shutdown gauges, kubelet_graceful_shutdown_start_time_seconds and _end_time_seconds: the
 * last shutdown's start and end in seconds since the epoch (0 until known), registered with graceful node shutdown
 * and its priority-based groups on. Both carry upstream's help text, which says "start" for the end too.
 */
import type { KubeletMetrics } from './kubelet-metrics.js';
import { Gauge } from './registry.js';

const HELP = '[ALPHA] Last graceful shutdown start time since unix epoch in seconds';

/** Registers the gauges; returns their setters. */
export function registerShutdownMetrics(metrics: KubeletMetrics): {
  startTime(seconds: number): void;
  endTime(seconds: number): void;
} {
  const start = metrics.register(new Gauge('kubelet_graceful_shutdown_start_time_seconds', HELP, []));
  const end = metrics.register(new Gauge('kubelet_graceful_shutdown_end_time_seconds', HELP, []));
  start.set(undefined, 0);
  end.set(undefined, 0);
  return { startTime: (s) => start.set(undefined, s), endTime: (s) => end.set(undefined, s) };
}
