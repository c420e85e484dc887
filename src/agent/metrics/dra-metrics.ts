/**
 * Upstream's DRA metrics of the kubelet (pkg/kubelet/cm/dra): the time to prepare or unprepare
 * all of a pod's claims (`dra_operations_duration_seconds`, by operation and whether it failed),
 * each gRPC call to a driver (`dra_grpc_operations_duration_seconds`, by driver, full method and
 * grpc-go's code name), and the ResourceClaims in use on the node, by driver and across all
 * drivers (`<any>`), read when scraped. The histograms name no buckets upstream: client_golang's
 * defaults.
 */
import { DEFAULT_BUCKETS, Gauge, Histogram } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

/** What the DRA manager observes. */
export interface DraMetrics {
  /** One PrepareResources or UnprepareResources of a pod's claims. */
  operation(name: 'PrepareResources' | 'UnprepareResources', failed: boolean, seconds: number): void;
  /** One gRPC call to a driver: its full method and grpc-go's name of its outcome ("OK", "Unavailable", …). */
  call(driver: string, method: string, code: string, seconds: number): void;
}

/** Registers the two histograms; the manager observes into what this returns. */
export function registerDraMetrics(metrics: KubeletMetrics): DraMetrics {
  const operations = new Histogram(
    'dra_operations_duration_seconds',
    "[ALPHA] Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod when the pod starts or stops. Identified by the name of the operation (PrepareResources or UnprepareResources) and separated by the success of the operation. The number of failed operations is provided through the histogram's overall count.",
    ['is_error', 'operation_name'],
    DEFAULT_BUCKETS,
  );
  const calls = new Histogram(
    'dra_grpc_operations_duration_seconds',
    '[ALPHA] Duration in seconds of the DRA gRPC operations',
    ['driver_name', 'grpc_status_code', 'method_name'],
    DEFAULT_BUCKETS,
  );
  metrics.register(operations);
  metrics.register(calls);
  return {
    operation: (name, failed, seconds) =>
      operations.observe({ is_error: String(failed), operation_name: name }, seconds),
    call: (driver, method, code, seconds) =>
      calls.observe({ driver_name: driver, grpc_status_code: code, method_name: method }, seconds),
  };
}

/** Registers `dra_resource_claims_in_use`, read from the manager when scraped. */
export function registerDraClaimsInUse(metrics: KubeletMetrics, dra: { claimsInUse(): Map<string, number> }): void {
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
