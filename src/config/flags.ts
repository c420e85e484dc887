/**
 * Command-line flags with the Go kubelet's names (pflag syntax: `--name=value`, `--name value`,
 * `--bool`, `--bool=false`). Implemented flags map onto KubeletConfiguration paths or kubelet
 * flags; known-but-unimplemented flags are collected for a warning; anything else is an error.
 */
import { booleanFlags, unimplementedFlags } from './known-names.js';

type Kind = 'string' | 'int' | 'number' | 'bool' | 'duration' | 'headers' | 'list' | 'map' | 'eviction' | 'taints' | 'gates';

/** Flags that set a config field (path into KubeletConfiguration). */
const configFlags: Record<string, { path: string[]; kind: Kind }> = {
  'pod-manifest-path': { path: ['staticPodPath'], kind: 'string' },
  'manifest-url': { path: ['staticPodURL'], kind: 'string' },
  'manifest-url-header': { path: ['staticPodURLHeader'], kind: 'headers' },
  'file-check-frequency': { path: ['fileCheckFrequency'], kind: 'duration' },
  'http-check-frequency': { path: ['httpCheckFrequency'], kind: 'duration' },
  'sync-frequency': { path: ['syncFrequency'], kind: 'duration' },
  address: { path: ['address'], kind: 'string' },
  port: { path: ['port'], kind: 'int' },
  'read-only-port': { path: ['readOnlyPort'], kind: 'int' },
  'healthz-port': { path: ['healthzPort'], kind: 'int' },
  'healthz-bind-address': { path: ['healthzBindAddress'], kind: 'string' },
  'tls-cert-file': { path: ['tlsCertFile'], kind: 'string' },
  'tls-private-key-file': { path: ['tlsPrivateKeyFile'], kind: 'string' },
  'client-ca-file': { path: ['authentication', 'x509', 'clientCAFile'], kind: 'string' },
  'tls-min-version': { path: ['tlsMinVersion'], kind: 'string' },
  'tls-cipher-suites': { path: ['tlsCipherSuites'], kind: 'list' },
  'authentication-token-webhook': { path: ['authentication', 'webhook', 'enabled'], kind: 'bool' },
  'authentication-token-webhook-cache-ttl': { path: ['authentication', 'webhook', 'cacheTTL'], kind: 'duration' },
  'anonymous-auth': { path: ['authentication', 'anonymous', 'enabled'], kind: 'bool' },
  'authorization-mode': { path: ['authorization', 'mode'], kind: 'string' },
  'authorization-webhook-cache-authorized-ttl': { path: ['authorization', 'webhook', 'cacheAuthorizedTTL'], kind: 'duration' },
  'authorization-webhook-cache-unauthorized-ttl': { path: ['authorization', 'webhook', 'cacheUnauthorizedTTL'], kind: 'duration' },
  'max-pods': { path: ['maxPods'], kind: 'int' },
  'container-runtime-endpoint': { path: ['containerRuntimeEndpoint'], kind: 'string' },
  'pod-logs-dir': { path: ['podLogsDir'], kind: 'string' },
  'streaming-connection-idle-timeout': { path: ['streamingConnectionIdleTimeout'], kind: 'duration' },
  'runtime-request-timeout': { path: ['runtimeRequestTimeout'], kind: 'duration' },
  'cluster-dns': { path: ['clusterDNS'], kind: 'list' },
  'allowed-unsafe-sysctls': { path: ['allowedUnsafeSysctls'], kind: 'list' },
  'shutdown-grace-period': { path: ['shutdownGracePeriod'], kind: 'duration' },
  'container-log-max-size': { path: ['containerLogMaxSize'], kind: 'string' },
  'container-log-max-files': { path: ['containerLogMaxFiles'], kind: 'int' },
  'cluster-domain': { path: ['clusterDomain'], kind: 'string' },
  'resolv-conf': { path: ['resolvConf'], kind: 'string' },
  'cgroups-per-qos': { path: ['cgroupsPerQOS'], kind: 'bool' },
  'cgroup-root': { path: ['cgroupRoot'], kind: 'string' },
  'kubelet-cgroups': { path: ['kubeletCgroups'], kind: 'string' },
  'system-cgroups': { path: ['systemCgroups'], kind: 'string' },
  'cgroup-driver': { path: ['cgroupDriver'], kind: 'string' },
  'system-reserved-cgroup': { path: ['systemReservedCgroup'], kind: 'string' },
  'kube-reserved-cgroup': { path: ['kubeReservedCgroup'], kind: 'string' },
  'feature-gates': { path: ['featureGates'], kind: 'gates' },
  'cpu-cfs-quota': { path: ['cpuCFSQuota'], kind: 'bool' },
  'cpu-cfs-quota-period': { path: ['cpuCFSQuotaPeriod'], kind: 'duration' },
  'serialize-image-pulls': { path: ['serializeImagePulls'], kind: 'bool' },
  'max-parallel-image-pulls': { path: ['maxParallelImagePulls'], kind: 'int' },
  'registry-qps': { path: ['registryPullQPS'], kind: 'int' },
  'registry-burst': { path: ['registryBurst'], kind: 'int' },
  'node-status-max-images': { path: ['nodeStatusMaxImages'], kind: 'int' },
  'pods-per-core': { path: ['podsPerCore'], kind: 'int' },
  'kube-api-qps': { path: ['kubeAPIQPS'], kind: 'number' },
  'kube-api-burst': { path: ['kubeAPIBurst'], kind: 'int' },
  'oom-score-adj': { path: ['oomScoreAdj'], kind: 'int' },
  'enable-server': { path: ['enableServer'], kind: 'bool' },
  'enable-debugging-handlers': { path: ['enableDebuggingHandlers'], kind: 'bool' },
  'seccomp-default': { path: ['seccompDefault'], kind: 'bool' },
  'image-service-endpoint': { path: ['imageServiceEndpoint'], kind: 'string' },
  'volume-stats-agg-period': { path: ['volumeStatsAggPeriod'], kind: 'duration' },
  'pod-max-pids': { path: ['podPidsLimit'], kind: 'int' },
  'cpu-manager-policy': { path: ['cpuManagerPolicy'], kind: 'string' },
  'cpu-manager-reconcile-period': { path: ['cpuManagerReconcilePeriod'], kind: 'duration' },
  'cpu-manager-policy-options': { path: ['cpuManagerPolicyOptions'], kind: 'map' },
  'reserved-cpus': { path: ['reservedSystemCPUs'], kind: 'string' },
  'topology-manager-policy': { path: ['topologyManagerPolicy'], kind: 'string' },
  'topology-manager-scope': { path: ['topologyManagerScope'], kind: 'string' },
  'local-storage-capacity-isolation': { path: ['localStorageCapacityIsolation'], kind: 'bool' },
  'protect-kernel-defaults': { path: ['protectKernelDefaults'], kind: 'bool' },
  'fail-swap-on': { path: ['failSwapOn'], kind: 'bool' },
  'enforce-node-allocatable': { path: ['enforceNodeAllocatable'], kind: 'list' },
  'image-gc-high-threshold': { path: ['imageGCHighThresholdPercent'], kind: 'int' },
  'image-gc-low-threshold': { path: ['imageGCLowThresholdPercent'], kind: 'int' },
  'minimum-image-ttl-duration': { path: ['imageMinimumGCAge'], kind: 'duration' },
  'register-node': { path: ['registerNode'], kind: 'bool' },
  'register-with-taints': { path: ['registerWithTaints'], kind: 'taints' },
  'provider-id': { path: ['providerID'], kind: 'string' },
  'node-status-update-frequency': { path: ['nodeStatusUpdateFrequency'], kind: 'duration' },
  'event-qps': { path: ['eventRecordQPS'], kind: 'int' },
  'event-burst': { path: ['eventBurst'], kind: 'int' },
  'kube-reserved': { path: ['kubeReserved'], kind: 'map' },
  'system-reserved': { path: ['systemReserved'], kind: 'map' },
  'eviction-hard': { path: ['evictionHard'], kind: 'eviction' },
  'eviction-pressure-transition-period': { path: ['evictionPressureTransitionPeriod'], kind: 'duration' },
  'eviction-soft': { path: ['evictionSoft'], kind: 'eviction' },
  'eviction-soft-grace-period': { path: ['evictionSoftGracePeriod'], kind: 'map' },
  'eviction-max-pod-grace-period': { path: ['evictionMaxPodGracePeriod'], kind: 'int' },
  'eviction-minimum-reclaim': { path: ['evictionMinimumReclaim'], kind: 'map' },
  'rotate-certificates': { path: ['rotateCertificates'], kind: 'bool' },
  'rotate-server-certificates': { path: ['serverTLSBootstrap'], kind: 'bool' },
};

/** Flags that are not part of KubeletConfiguration. */
const kubeletFlags: Record<string, Kind> = {
  config: 'string',
  'config-dir': 'string',
  kubeconfig: 'string',
  'bootstrap-kubeconfig': 'string',
  'cert-dir': 'string',
  'node-labels': 'map',
  'pod-infra-container-image': 'string',
  'minimum-container-ttl-duration': 'duration',
  'maximum-dead-containers-per-container': 'int',
  'maximum-dead-containers': 'int',
  'hostname-override': 'string',
  'node-ip': 'string',
  // Only "external" (an out-of-tree cloud controller manager), as upstream since the in-tree providers went.
  'cloud-provider': 'string',
  'image-credential-provider-config': 'string',
  'image-credential-provider-bin-dir': 'string',
  'runtime-cgroups': 'string',
  'root-dir': 'string',
  // tskubelet's own: where the legacy container log links go (upstream hard-codes /var/log/containers).
  'container-logs-dir': 'string',
  v: 'int',
  'logging-format': 'string',
  help: 'bool',
  version: 'bool',
};

/** The parsed command line. */
export interface ParsedFlags {
  /** Partial KubeletConfiguration set by flags (overrides the file). */
  config: Record<string, unknown>;
  /** Kubelet flags by name. */
  flags: {
    config?: string;
    /** --config-dir: drop-in KubeletConfiguration fragments (config/drop-ins.ts). */
    configDir?: string;
    kubeconfig?: string;
    bootstrapKubeconfig?: string;
    certDir?: string;
    nodeLabels?: Record<string, string>;
    podInfraContainerImage?: string;
    minimumContainerTtlDuration?: string;
    maximumDeadContainersPerContainer?: number;
    maximumDeadContainers?: number;
    hostnameOverride?: string;
    nodeIp?: string;
    cloudProvider?: string;
    imageCredentialProviderConfig?: string;
    imageCredentialProviderBinDir?: string;
    runtimeCgroups?: string;
    rootDir?: string;
    containerLogsDir?: string;
    v?: number;
    loggingFormat?: string;
    help?: boolean;
    version?: boolean;
  };
  /** Known upstream flags that are accepted but not implemented. */
  unimplemented: string[];
  /** Positional arguments (subcommands). */
  positional: string[];
}

/** A flag error: the message names the flag and the reason. */
export class FlagError extends Error {}

/** Go's strconv.ParseBool; undefined for anything else. */
function goBool(raw: string): boolean | undefined {
  if (/^(1|t|T|TRUE|true|True)$/.test(raw)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(raw)) return false;
  return undefined;
}

function convert(name: string, kind: Kind, raw: string): unknown {
  if (kind === 'int') {
    if (!/^-?\d+$/.test(raw)) throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be an integer`);
    return Number(raw);
  }
  if (kind === 'number') {
    if (!/^-?(\d+\.?\d*|\.\d+)(e-?\d+)?$/i.test(raw)) throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be a number`);
    return Number(raw);
  }
  if (kind === 'bool') {
    const on = goBool(raw);
    if (on === undefined) throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be a boolean`);
    return on;
  }
  if (kind === 'gates') {
    // The map kind's key=value pairs, each value a Go boolean.
    const bad = () => new FlagError(`invalid argument "${raw}" for "--${name}" flag: want "Gate=true|false" pairs separated by commas`);
    let pairs: Record<string, string>;
    try {
      pairs = convert(name, 'map', raw) as Record<string, string>;
    } catch {
      throw bad();
    }
    const out: Record<string, boolean> = {};
    for (const [gate, value] of Object.entries(pairs)) {
      const on = goBool(value.trim());
      if (on === undefined) throw bad();
      out[gate.trim()] = on;
    }
    return out;
  }
  if (kind === 'list')
    return raw
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  if (kind === 'map' || kind === 'eviction') {
    const sep = kind === 'map' ? '=' : '<';
    const out: Record<string, string> = {};
    for (const pair of raw
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)) {
      const i = pair.indexOf(sep);
      if (i <= 0) throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: want "key${sep}value" pairs separated by commas`);
      out[pair.slice(0, i)] = pair.slice(i + 1);
    }
    return out;
  }
  if (kind === 'taints') {
    return raw
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)
      .map((t) => {
        const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(t);
        if (!m)
          throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: want key[=value]:Effect with Effect NoSchedule, PreferNoSchedule or NoExecute`);
        return { key: m[1], ...(m[2] !== undefined ? { value: m[2] } : {}), effect: m[3] };
      });
  }
  return raw;
}

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let o = obj;
  for (const k of path.slice(0, -1)) {
    o[k] = (o[k] as Record<string, unknown>) ?? {};
    o = o[k] as Record<string, unknown>;
  }
  o[path[path.length - 1]] = value;
}

const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** Parses argv (without node and script). */
export function parseFlags(argv: string[]): ParsedFlags {
  const out: ParsedFlags = { config: {}, flags: {}, unimplemented: [], positional: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-') {
      out.positional.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    let value: string | undefined = eq >= 0 ? body.slice(eq + 1) : undefined;
    const known: { kind: Kind; path?: string[] } | undefined = configFlags[name] ?? (kubeletFlags[name] ? { kind: kubeletFlags[name] } : undefined);
    const isBool = known ? known.kind === 'bool' : booleanFlags.has(name);
    if (!known && !unimplementedFlags.has(name) && !booleanFlags.has(name)) throw new FlagError(`unknown flag: --${name}`);
    if (value === undefined) {
      if (isBool) value = 'true';
      else {
        if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: --${name}`);
        value = argv[++i];
      }
    }
    if (!known) {
      out.unimplemented.push(name);
      continue;
    }
    if (known.path) {
      if (known.kind === 'headers') {
        const cur = (out.config.staticPodURLHeader as Record<string, string[]>) ?? {};
        for (const pair of value.split(',')) {
          const c = pair.indexOf(':');
          if (c <= 0) throw new FlagError(`invalid argument "${value}" for "--${name}" flag: want "Key:Value"`);
          (cur[pair.slice(0, c)] ??= []).push(pair.slice(c + 1));
        }
        out.config.staticPodURLHeader = cur;
      } else setPath(out.config, known.path, convert(name, known.kind, value!));
    } else {
      (out.flags as Record<string, unknown>)[camel(name)] = convert(name, known.kind, value!);
    }
  }
  return out;
}

/** The implemented flags, for --help. */
export function flagHelp(): string {
  const lines = Object.keys(configFlags)
    .concat(Object.keys(kubeletFlags))
    .sort()
    .map((f) => `  --${f}`);
  return `Usage: tskubelet [flags]\n       tskubelet process-runtime --listen unix:///path.sock [--root-dir DIR]\n\nFlags (Go kubelet names):\n${lines.join('\n')}\n\nOther Go kubelet flags are accepted and reported as not implemented.\n`;
}
