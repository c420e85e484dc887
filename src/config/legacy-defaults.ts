/**
 * Upstream's applyLegacyDefaults: what a kubelet started without --config uses where the config file's defaults
 * differ (the read-only port open, no webhook, AlwaysAllow), the defaults its flags show. One deliberate exception:
 * anonymous authentication, which upstream enables here and tskubelet never enables by default.
 */
export const LEGACY_FLAG_DEFAULTS: Readonly<Record<string, unknown>> = {
  readOnlyPort: 10255,
  authentication: { webhook: { enabled: false } },
  authorization: { mode: 'AlwaysAllow' },
};
