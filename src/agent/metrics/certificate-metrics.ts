/**
 * Upstream's certificate manager metrics for the kubelet's rotating certificates (registered by
 * main.ts once the client rotator or the serving certificate manager runs).
 */
import { Gauge, Histogram } from './registry.js';
import type { RotationStatus } from '../certificate/rotation-loop.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

/** Upstream's buckets for how long a serving certificate lived: 1 minute … 4 years. */
const ROTATION_BUCKETS = [60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000];

/**
 * Upstream's certificate manager metrics for a rotating certificate, from its loop's status: the
 * seconds until it expires (truncated; +Inf without one), the failed renewals, and for the serving
 * certificate how long each one lived before it was replaced.
 */
export function registerCertificateMetrics(
  metrics: KubeletMetrics,
  kind: 'client' | 'server',
  status: RotationStatus,
  now: () => number = Date.now,
): void {
  const ttl = (): number => (status.notAfter === undefined ? Infinity : Math.trunc((status.notAfter - now()) / 1000));
  const which = kind === 'client' ? "the Kubelet's client certificate" : "the Kubelet's serving certificate";
  metrics.register(
    new Gauge(
      `kubelet_certificate_manager_${kind}_ttl_seconds`,
      `[ALPHA] Gauge of the ${kind === 'server' ? 'shortest ' : ''}TTL (time-to-live) of ${which}. The value is in seconds until certificate expiry (negative if already expired). If ${kind === 'client' ? 'client' : 'serving'} certificate is invalid or unused, the value will be +INF.`,
      [],
      (g) => g.set(undefined, ttl()),
    ),
  );
  if (kind === 'server') {
    const lived = metrics.register(
      new Histogram(
        'kubelet_certificate_manager_server_rotation_seconds',
        '[ALPHA] Histogram of the number of seconds the previous certificate lived before being rotated.',
        [],
        ROTATION_BUCKETS,
      ),
    );
    status.onRotated = (s) => lived.observe(undefined, s);
  }
  metrics.register({
    family: () => ({
      name:
        kind === 'client'
          ? 'kubelet_certificate_manager_client_expiration_renew_errors'
          : 'kubelet_server_expiration_renew_errors',
      help: '[ALPHA] Counter of certificate renewal errors.',
      type: 'counter' as const,
      samples: [{ value: status.renewFailures }],
    }),
  });
}
