/**
 * The kubelet's HTTP server metrics, as upstream's: requests answered, their durations, and those in flight (labelled
 * by method, first path segment, server type and long-running).
 */
import { Counter, Gauge, Histogram, type Registry } from './registry.js';

type HttpLabel = 'method' | 'path' | 'server_type' | 'long_running';
const LABELS: HttpLabel[] = ['method', 'path', 'server_type', 'long_running'];

/**
 * Registers kubelet_http_requests_total, kubelet_http_requests_duration_seconds and kubelet_http_inflight_requests on
 * `r`.
 */
export function registerHttpMetrics(
  r: Registry,
  buckets: readonly number[],
): { requests: Counter<HttpLabel>; duration: Histogram<HttpLabel>; inflight: Gauge<HttpLabel> } {
  return {
    requests: r.register(
      new Counter(
        'kubelet_http_requests_total',
        '[ALPHA] Number of the http requests received since the server started',
        LABELS,
      ),
    ),
    duration: r.register(
      new Histogram(
        'kubelet_http_requests_duration_seconds',
        '[ALPHA] Duration in seconds to serve http requests',
        LABELS,
        buckets,
      ),
    ),
    inflight: r.register(
      new Gauge('kubelet_http_inflight_requests', '[ALPHA] Number of the inflight http requests', LABELS),
    ),
  };
}
