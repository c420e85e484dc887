/**
 * Resolves the effective configuration: the config file (YAML/JSON) with the flags on top,
 * validated by the zod schema, plus the kubelet-only flags (node name, node IP, root dir).
 * Precedence is upstream's: flags over file over defaults. Note the upstream quirk kept here:
 * `--read-only-port` defaults to 10255 as a flag, but to 0 (disabled) in a config file.
 */
import { nodeLabelsError } from './node-labels.js';
import { access, constants } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname, networkInterfaces, homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseDuration } from '../lib/duration.js';
import { messageOf } from '../lib/errors.js';
import { goPathError } from '../lib/go-format.js';
import { LEGACY_FLAG_DEFAULTS } from './legacy-defaults.js';
import { aggregateMessage } from '../lib/aggregate-message.js';
import { DEFAULT_EVICTION_HARD, kubeletConfigSchema, type KubeletConfiguration } from './schema.js';
import {
  featureGatesFollowedAtDefault,
  implementedFeatureGates,
  unimplementedButSatisfied,
  unimplementedConfigFields,
} from './known-names.js';
import { applyFileDefaults } from './file-defaults.js';
import { goTlsVersions, opensslCiphers, opensslGroups } from '../lib/tls-names.js';
import { opensslHasGroup } from '../lib/openssl-groups.js';
import type { ParsedFlags } from './flags.js';
import { evictionThresholds } from './eviction-thresholds.js';
import { configErrors } from './validate.js';
import { applyDropIns, mergePatch } from './drop-ins.js';
import { LOG_FORMATS, type LogFormat } from '../lib/logger.js';
import { parseYamlBounded, readTextBounded } from '../lib/bounded-yaml.js';
import { LOCKED_FEATURE_GATES, lockedGateError } from './feature-gates.js';

/** A configuration error: start-up stops with this message and exit code 1. */
export class ConfigError extends Error {}

/** Everything main needs to run. */
export interface ResolvedConfig {
  kc: KubeletConfiguration;
  /** The file's values of the fields accepted without effect (known-names.ts), as given: /configz shows them. */
  acceptedOnly: Record<string, unknown>;
  /** The --kubeconfig path (absolute), when given. */
  kubeconfig?: string;
  /** --bootstrap-kubeconfig (absolute), when given. */
  bootstrapKubeconfig?: string;
  /** --cert-dir (default <root-dir>/pki). */
  certDir: string;
  nodeName: string;
  nodeIP: string;
  /** Whether --node-ip named the node IP (else it was detected). */
  nodeIPSpecified: boolean;
  /** The second address of a dual-stack --node-ip ("IPv4,IPv6"). */
  secondaryNodeIP?: string;
  /** --image-credential-provider-config and --image-credential-provider-bin-dir (absolute). */
  imageCredentialProvider?: { configPath: string; binDir: string };
  /** --cloud-provider=external: a cloud controller manager initializes the Node. */
  externalCloudProvider: boolean;
  rootDir: string;
  podLogsDir: string;
  /** Where the legacy container log links go (/var/log/containers). */
  containerLogsDir: string;
  /** --lock-file (absolute), when given, and --exit-on-lock-contention. */
  lockFile?: string;
  exitOnLockContention: boolean;
  verbosity: number;
  /** logging.format / --logging-format: text (klog's, the default) or json. */
  loggingFormat: LogFormat;
  fileCheckFrequencyMs: number;
  httpCheckFrequencyMs: number;
  syncFrequencyMs: number;
  /** --minimum-container-ttl-duration, --maximum-dead-containers-per-container, --maximum-dead-containers. */
  containerGc: { minAgeMs: number; maxPerPodContainer: number; maxContainers: number };
  /** --runtime-cgroups: the container runtime's cgroup (its system container in the summary). */
  runtimeCgroups?: string;
  /** --node-labels. */
  nodeLabels: Record<string, string>;
  /** Human-readable notes to log once at start-up (unimplemented names, path fallbacks). */
  warnings: string[];
  /**
   * The fields of the file and drop-ins no v1beta1 KubeletConfiguration has, left out as upstream's lenient decoding
   * leaves them (`strict decoding error: unknown field "…"`, logged at start); undefined when there were none.
   */
  strictDecodingError?: string;
}

/**
 * --node-ip as upstream's ParseNodeIPArgument: one address, or two of different families
 * (dual-stack); 0.0.0.0 / :: mean "detect it" (none named).
 */
export function parseNodeIPs(v: string): string[] {
  if (!v) return [];
  const ips = v.split(',').map((x) => x.trim());
  const bad = (why: string) => new ConfigError(`could not parse --node-ip "${v}": ${why}`);
  if (ips.length > 2) throw bad('at most two addresses (dual-stack)');
  for (const ip of ips) if (!isIP(ip)) throw bad(`${JSON.stringify(ip)} is not an IP address`);
  if (ips.length === 2 && isIP(ips[0]) === isIP(ips[1]))
    throw bad('a dual-stack pair needs one IPv4 and one IPv6 address');
  if (ips.some((ip) => ip === '0.0.0.0' || ip === '::')) {
    if (ips.length > 1) throw bad('an unspecified address cannot be part of a pair');
    return [];
  }
  return ips;
}

/** Upstream's start failure for a configuration ValidateKubeletConfiguration refuses (all its reasons at once). */
export function validationError(reasons: readonly string[]): ConfigError {
  return new ConfigError(`failed to validate kubelet configuration, error: ${aggregateMessage(reasons)}`);
}

/** A field's path as Go's strict decoder names it: `authentication.x509.nope`, `reservedMemory[0].limits`. Pure. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i ? '.' : ''}${String(k)}`)).join('');
}

/** The first non-internal IPv4 address of the host, else 127.0.0.1. */
export function defaultNodeIP(): string {
  for (const addrs of Object.values(networkInterfaces()))
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

async function writable(dir: string): Promise<boolean> {
  let d = dir;
  for (;;) {
    try {
      await access(d, constants.W_OK);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return false;
      const up = dirname(d);
      if (up === d) return false;
      d = up;
    }
  }
}

/** Reads and validates the file and flags. */
export async function loadConfig(parsed: ParsedFlags): Promise<ResolvedConfig> {
  // Upstream's ValidateKubeletFlags, before the config file is read.
  const labelsError = nodeLabelsError(parsed.flags.nodeLabels ?? {});
  if (labelsError) throw new ConfigError(`failed to validate kubelet flags: ${labelsError}`);
  const warnings: string[] = [];
  /** Paths of the fields no v1beta1 KubeletConfiguration has (`authentication.x509.nope`), in the order met. */
  const unknownFields: string[] = [];
  let file: Record<string, unknown> = {};
  /** logging.verbosity of the file: the log level unless --v is given. */
  let loggingVerbosity: unknown;
  /** logging.format of the file, unless --logging-format is given. */
  let loggingFormat: unknown;
  /** The fields the file gave that tskubelet accepts without acting on them (served by /configz). */
  const acceptedOnly: Record<string, unknown> = {};
  let configDir = process.cwd();
  let obj: Record<string, unknown> | undefined;
  if (parsed.flags.config) {
    const given = parsed.flags.config;
    const path = resolve(given);
    configDir = dirname(path);
    // Upstream's three layers of wording (RunE, loadConfigFile, the loader): what an operator greps the journal for.
    const loadError = (why: string) =>
      new ConfigError(
        `failed to load kubelet config file, path: ${given}, error: failed to load Kubelet config file ${given}, error ${why}`,
      );
    let text: string;
    try {
      text = await readTextBounded(path);
    } catch (err) {
      throw loadError(`failed to read kubelet config file "${path}", error: ${goPathError('open', path, err)}`);
    }
    // No configuration is an error: some parameters are required.
    if (!text.length) throw loadError(`kubelet config file "${path}" was empty`);
    let doc: unknown;
    try {
      doc = parseYamlBounded(text);
    } catch (err) {
      throw loadError(`failed to decode: ${messageOf(err)}`);
    }
    if (doc === null || doc === undefined) doc = {};
    if (typeof doc !== 'object' || Array.isArray(doc))
      throw loadError('failed to decode: the document is not a KubeletConfiguration object');
    obj = doc as Record<string, unknown>;
  }
  // The drop-ins go over the file (or, without one, over the flags' legacy defaults below).
  if (parsed.flags.configDir) {
    try {
      obj = await applyDropIns(obj ?? {}, resolve(parsed.flags.configDir));
    } catch (err) {
      throw new ConfigError(messageOf(err));
    }
  }
  if (!parsed.flags.config) file = structuredClone(LEGACY_FLAG_DEFAULTS) as Record<string, unknown>;
  if (obj) {
    // Upstream's defaulting of zero values (kubeadm writes "0s" for "the default").
    const given = applyFileDefaults(obj);
    const known = kubeletConfigSchema.shape;
    for (const key of Object.keys(given)) {
      if (key in known) continue;
      if (unimplementedConfigFields.has(key)) {
        if (key === 'logging')
          ({ verbosity: loggingVerbosity, format: loggingFormat } = (given.logging ?? {}) as {
            verbosity?: unknown;
            format?: unknown;
          });
        if (!unimplementedButSatisfied[key]?.(given[key]))
          warnings.push(`config field "${key}" is accepted but not implemented yet; it has no effect`);
        acceptedOnly[key] = given[key];
        delete given[key];
        continue;
      }
      unknownFields.push(key);
      delete given[key];
    }
    // Relative paths in the file are relative to the file (as upstream resolves them).
    for (const k of ['staticPodPath', 'tlsCertFile', 'tlsPrivateKeyFile', 'podLogsDir'] as const) {
      if (typeof given[k] === 'string' && given[k] && !(given[k] as string).startsWith('/'))
        given[k] = join(configDir, given[k] as string);
    }
    const auth = given.authentication as { x509?: { clientCAFile?: string } } | undefined;
    if (
      typeof auth?.x509?.clientCAFile === 'string' &&
      auth.x509.clientCAFile &&
      !auth.x509.clientCAFile.startsWith('/')
    )
      auth.x509.clientCAFile = join(configDir, auth.x509.clientCAFile);
    file = mergePatch(file, given);
  }
  for (const f of parsed.unimplemented)
    warnings.push(`flag --${f} is accepted but not implemented yet; it has no effect`);
  const merged = mergePatch(file, parsed.config);
  let res = kubeletConfigSchema.safeParse(merged);
  // Unknown fields inside the file's structs: left out too (only the file and drop-ins can name them), then the rest
  // judged again.
  for (let round = 0; !res.success && round < 8; round++) {
    const unknownInside = res.error.issues.filter((i) => i.code === 'unrecognized_keys');
    if (!unknownInside.length) break;
    for (const issue of unknownInside) {
      const parent = issue.path.reduce<unknown>((o, k) => (o as Record<PropertyKey, unknown>)?.[k], merged);
      for (const key of issue.keys) {
        unknownFields.push(fieldPath([...issue.path, key]));
        delete (parent as Record<string, unknown>)[key];
      }
    }
    res = kubeletConfigSchema.safeParse(merged);
  }
  if (!res.success) {
    const i = res.error.issues[0];
    throw new ConfigError(`invalid value for field "${i.path.join('.')}": ${i.message}`);
  }
  const kc = res.data;
  // mergeDefaultEvictionSettings: the signals a given evictionHard leaves out keep their defaults.
  if (kc.mergeDefaultEvictionSettings) kc.evictionHard = { ...DEFAULT_EVICTION_HARD, ...kc.evictionHard };
  if (kc.tlsMinVersion !== undefined && !goTlsVersions[kc.tlsMinVersion])
    throw new ConfigError(
      `invalid value for field "tlsMinVersion": unknown TLS version "${kc.tlsMinVersion}" (want one of ${Object.keys(goTlsVersions).join(', ')})`,
    );
  if (kc.tlsCipherSuites) {
    try {
      opensslCiphers(kc.tlsCipherSuites);
    } catch (err) {
      throw new ConfigError(`invalid value for field "tlsCipherSuites": ${messageOf(err)}`);
    }
  }
  if (kc.tlsCurvePreferences?.length) {
    let offered;
    try {
      offered = opensslGroups(kc.tlsCurvePreferences, opensslHasGroup);
    } catch (err) {
      throw new ConfigError(`invalid value for field "tlsCurvePreferences": ${messageOf(err)}`);
    }
    if (offered.unsupported.length)
      warnings.push(
        `tlsCurvePreferences: ${offered.unsupported.join(', ')} not offered: this Node's OpenSSL ${process.versions.openssl} lacks ${offered.unsupported.length > 1 ? 'them' : 'it'}`,
      );
    if (!offered.groups.length)
      throw new ConfigError(
        `invalid value for field "tlsCurvePreferences": none of the curves is supported by this Node's OpenSSL ${process.versions.openssl}`,
      );
  }
  const locked = lockedGateError(kc.featureGates);
  if (locked) throw new ConfigError(locked);
  // A locked gate set to its value changes nothing: no warning.
  for (const gate of Object.keys(kc.featureGates ?? {}).filter(
    (g) =>
      !implementedFeatureGates.has(g) &&
      !LOCKED_FEATURE_GATES.has(g) &&
      featureGatesFollowedAtDefault.get(g) !== kc.featureGates![g],
  ))
    warnings.push(`feature gate "${gate}" is accepted but not implemented yet; it has no effect`);
  // Upstream reports every broken rule at once.
  const invalid = configErrors(kc);
  if (invalid.length) throw validationError(invalid);
  try {
    evictionThresholds(kc);
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${messageOf(err)}`);
  }
  const minTtl = parsed.flags.minimumContainerTtlDuration ?? '0s';
  if (parseDuration(minTtl) === undefined)
    throw new ConfigError(
      `invalid argument "${minTtl}" for "--minimum-container-ttl-duration" flag: must be a duration`,
    );
  const kubeconfig = parsed.flags.kubeconfig ? resolve(parsed.flags.kubeconfig) : undefined;
  const bootstrapKubeconfig = parsed.flags.bootstrapKubeconfig ? resolve(parsed.flags.bootstrapKubeconfig) : undefined;
  if (bootstrapKubeconfig && !kubeconfig)
    throw new ConfigError(
      '--bootstrap-kubeconfig needs --kubeconfig: the path where the bootstrapped kubeconfig is written',
    );
  const needsApi = [
    kc.authentication.webhook.enabled && 'authentication.webhook.enabled=true',
    kc.authorization.mode === 'Webhook' && 'authorization.mode=Webhook',
  ].filter(Boolean);
  if (needsApi.length && !kubeconfig) {
    throw new ConfigError(
      `${needsApi.join(' and ')} need an apiserver: pass --kubeconfig, or for a standalone kubelet set authentication.webhook.enabled=false and authorization.mode=AlwaysAllow`,
    );
  }
  const isRoot = process.getuid?.() === 0;
  let rootDir = parsed.flags.rootDir ? resolve(parsed.flags.rootDir) : '/var/lib/kubelet';
  let podLogsDir = kc.podLogsDir;
  let containerLogsDir = parsed.flags.containerLogsDir ? resolve(parsed.flags.containerLogsDir) : '/var/log/containers';
  if (!isRoot) {
    const base = join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'tskubelet');
    if (!parsed.flags.rootDir && !(await writable(rootDir))) {
      rootDir = join(base, 'root');
      warnings.push(`not running as root: using root dir ${rootDir} instead of /var/lib/kubelet`);
    }
    if (podLogsDir === '/var/log/pods' && !(await writable(podLogsDir))) {
      podLogsDir = join(base, 'pods');
      warnings.push(`not running as root: writing pod logs to ${podLogsDir} instead of /var/log/pods`);
    }
    if (!parsed.flags.containerLogsDir && !(await writable(containerLogsDir))) {
      containerLogsDir = join(base, 'containers');
      warnings.push(
        `not running as root: linking container logs in ${containerLogsDir} instead of /var/log/containers`,
      );
    }
  }
  const nodeName = (parsed.flags.hostnameOverride || hostname()).toLowerCase().trim();
  const nodeIPs = parseNodeIPs(parsed.flags.nodeIp ?? '');
  const credConfig = parsed.flags.imageCredentialProviderConfig;
  if (credConfig && !parsed.flags.imageCredentialProviderBinDir)
    throw new ConfigError('--image-credential-provider-bin-dir is required with --image-credential-provider-config');
  const cloudProvider = parsed.flags.cloudProvider ?? '';
  if (cloudProvider !== '' && cloudProvider !== 'external')
    throw new ConfigError(
      `--cloud-provider="${cloudProvider}" is not supported: the in-tree cloud providers are gone; use "external" with a cloud controller manager`,
    );
  // As component-base's logging validation: a format it does not know stops the start.
  const format = parsed.flags.loggingFormat ?? loggingFormat ?? 'text';
  if (!LOG_FORMATS.includes(format as LogFormat))
    throw new ConfigError(
      `logging.format: Unsupported value: ${JSON.stringify(format)}: supported values: ${LOG_FORMATS.map((f) => `"${f}"`).join(', ')}`,
    );
  return {
    kc,
    acceptedOnly,
    kubeconfig,
    bootstrapKubeconfig,
    certDir: parsed.flags.certDir ? resolve(parsed.flags.certDir) : join(rootDir, 'pki'),
    nodeName,
    nodeIP: nodeIPs[0] ?? defaultNodeIP(),
    secondaryNodeIP: nodeIPs[1],
    nodeIPSpecified: nodeIPs.length > 0,
    externalCloudProvider: cloudProvider === 'external',
    imageCredentialProvider: credConfig
      ? { configPath: resolve(credConfig), binDir: resolve(parsed.flags.imageCredentialProviderBinDir!) }
      : undefined,
    rootDir,
    podLogsDir,
    containerLogsDir,
    lockFile: parsed.flags.lockFile ? resolve(parsed.flags.lockFile) : undefined,
    exitOnLockContention: parsed.flags.exitOnLockContention === true,
    verbosity: parsed.flags.v ?? (typeof loggingVerbosity === 'number' ? loggingVerbosity : 0),
    loggingFormat: format as LogFormat,
    fileCheckFrequencyMs: parseDuration(kc.fileCheckFrequency)!,
    httpCheckFrequencyMs: parseDuration(kc.httpCheckFrequency)!,
    syncFrequencyMs: parseDuration(kc.syncFrequency)!,
    warnings,
    strictDecodingError: unknownFields.length
      ? `strict decoding error: ${unknownFields.map((f) => `unknown field "${f}"`).join(', ')}`
      : undefined,
    runtimeCgroups: parsed.flags.runtimeCgroups,
    nodeLabels: parsed.flags.nodeLabels ?? {},
    containerGc: {
      minAgeMs: parseDuration(minTtl)!,
      maxPerPodContainer: parsed.flags.maximumDeadContainersPerContainer ?? 1,
      maxContainers: parsed.flags.maximumDeadContainers ?? -1,
    },
  };
}
