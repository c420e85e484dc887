/**
 * The configuration /configz serves: what the kubelet runs with, plus the fields it accepts without acting on them
 * (known-names.ts) as a Go kubelet v1.36 would show them — the value the file gave, else upstream's default
 * (pkg/kubelet/apis/config/v1beta1/defaults.go). Without them /configz would lack `hairpinMode`, `volumePluginDir`,
 * `logging` and the rest that every Go kubelet's has, and what the upstream node e2e harness writes back from it
 * would turn a Go pointer field that was left out (`enableControllerAttachDetach`) into an explicit zero. Pure.
 */
import type { LogFormat } from '../lib/logger.js';
import { v1beta1Encoding } from './v1beta1-encoding.js';

/** Upstream's v1beta1 defaults of the fields tskubelet accepts but does not implement (nil pointers left out). */
const UPSTREAM_DEFAULTS_OF_ACCEPTED_ONLY: Readonly<Record<string, unknown>> = {
  hairpinMode: 'promiscuous-bridge',
  contentType: 'application/vnd.kubernetes.protobuf',
  enableControllerAttachDetach: true,
  makeIPTablesUtilChains: true,
  iptablesMasqueradeBit: 14,
  iptablesDropBit: 15,
  volumePluginDir: '/usr/libexec/kubernetes/kubelet-plugins/volume/exec/',
  memoryThrottlingFactor: 0.9,
  memoryReservationPolicy: 'None',
};

/** component-base's recommended logging configuration (SetRecommendedLoggingConfiguration), as v1beta1 encodes it. */
const RECOMMENDED_LOGGING = {
  format: 'text',
  flushFrequency: '5s',
  verbosity: 0,
  options: { text: { infoBufferSize: '0' }, json: { infoBufferSize: '0' } },
};

export interface ConfigzInputs {
  /** The effective configuration of the fields tskubelet implements. */
  config: Readonly<Record<string, unknown>>;
  /** The accepted-only fields as the configuration file gave them. */
  acceptedOnly: Readonly<Record<string, unknown>>;
  /** The log verbosity and format in effect (--v and --logging-format over the file's `logging`). */
  verbosity: number;
  loggingFormat: LogFormat;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The v1beta1 KubeletConfiguration /configz serves. */
export function configzView({
  config,
  acceptedOnly,
  verbosity,
  loggingFormat,
}: ConfigzInputs): Record<string, unknown> {
  const givenLogging = isRecord(acceptedOnly.logging) ? acceptedOnly.logging : {};
  const logging = {
    ...RECOMMENDED_LOGGING,
    ...givenLogging,
    format: loggingFormat,
    verbosity,
    options: isRecord(givenLogging.options) ? givenLogging.options : RECOMMENDED_LOGGING.options,
  };
  return v1beta1Encoding({ ...UPSTREAM_DEFAULTS_OF_ACCEPTED_ONLY, ...acceptedOnly, logging, ...config });
}
