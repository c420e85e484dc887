/**
 * Upstream's credential provider plugin metrics (pkg/credentialprovider/plugin/metrics.go): each
 * plugin's failed runs and how long its runs took, by plugin name.
 */
import { Counter, DEFAULT_BUCKETS, Histogram } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

export interface CredentialProviderMetrics {
  ran(plugin: string, seconds: number, failed: boolean): void;
}

export function registerCredentialProviderMetrics(metrics: KubeletMetrics): CredentialProviderMetrics {
  const errors = metrics.register(
    new Counter(
      'kubelet_credential_provider_plugin_errors_total',
      '[ALPHA] Number of errors from credential provider plugin',
      ['plugin_name'],
    ),
  );
  const duration = metrics.register(
    new Histogram(
      'kubelet_credential_provider_plugin_duration',
      '[ALPHA] Duration of execution in seconds for credential provider plugin',
      ['plugin_name'],
      DEFAULT_BUCKETS,
    ),
  );
  return {
    ran: (plugin, seconds, failed) => {
      duration.observe({ plugin_name: plugin }, seconds);
      if (failed) errors.inc({ plugin_name: plugin });
    },
  };
}
