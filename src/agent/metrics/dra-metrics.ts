/**
 * Upstream's DRA metric of the kubelet (pkg/kubelet/cm/dra): the ResourceClaims in use on the
 * node, by driver and across all drivers (`<any>`), read when scraped.
 */
import { Gauge } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

export function registerDraMetrics(metrics: KubeletMetrics, dra: { claimsInUse(): Map<string, number> }): void {
  metrics.register(
    new Gauge(
      'dra_resource_claims_in_use',
      '[ALPHA] The number of ResourceClaims that are currently in use on the node, by driver name (driver_name label value) and across all drivers (special value <any> for driver_name). Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim might use devices from different drivers. Instead, use the count for the <any> driver_name.',
      ['driver_name'],
      (g) => {
        g.reset();
        for (const [driver, n] of dra.claimsInUse()) g.set({ driver_name: driver }, n);
      },
    ),
  );
}
