/**
 * Upstream's credential provider plugin metrics (pkg/credentialprovider/plugin/metrics.go): each
 * plugin's failed runs and how long its runs took, by plugin name, and the hash of the config in
 * use (`kubelet_credential_provider_config_info`, 1 for that hash).
 */
import { Counter, DEFAULT_BUCKETS, Gauge, Histogram } from './registry.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

export interface CredentialProviderMetrics {
  ran(plugin: string, seconds: number, failed: boolean): void;
  /** The config now in use, by its hash (`sha256:<hex>`). */
  configApplied(hash: string): void;
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
  const configInfo = metrics.register(
    new Gauge(
      'kubelet_credential_provider_config_info',
      '[ALPHA] Information about the last applied credential provider configuration with hash as label',
      ['hash'],
    ),
  );
  return {
    configApplied: (hash) => {
      configInfo.reset();
      configInfo.set({ hash }, 1);
    },
    ran: (plugin, seconds, failed) => {
      duration.observe({ plugin_name: plugin }, seconds);
      if (failed) errors.inc({ plugin_name: plugin });
    },
  };
}
