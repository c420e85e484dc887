/**
 * Upstream's certificate manager metrics for the kubelet's rotating certificates (registered by
 * main.ts once the client rotator or the serving certificate manager runs).
 */
import { Gauge } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

/**
 * Upstream's certificate manager metrics for a rotating certificate, from its loop's status: the
 * seconds until it expires (truncated; +Inf without one) and the failed renewals.
 */
export function registerCertificateMetrics(
  metrics: KubeletMetrics,
  kind: 'client' | 'server',
  status: { notAfter?: number; renewFailures: number },
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
  metrics.register({
    family: () => ({
      name: kind === 'client' ? 'kubelet_certificate_manager_client_expiration_renew_errors' : 'kubelet_server_expiration_renew_errors',
      help: '[ALPHA] Counter of certificate renewal errors.',
      type: 'counter' as const,
      samples: [{ value: status.renewFailures }],
    }),
  });
}
