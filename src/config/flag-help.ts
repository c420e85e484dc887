/**
 * `--help` as pflag prints the Go kubelet's: every flag sorted by name, with its value type, what it does, its
 * default (what this kubelet uses when neither the flag nor a config file sets it) and, for a deprecated flag, why
 * (flag-deprecations.ts). The types are pflag's names (`duration`, `int32`, `mapStringString`, …), so a command line
 * written against the Go kubelet's help reads the same here. Pure.
 */
import { kubeletConfigSchema } from './schema.js';
import { configFlags, type Kind } from './config-flags.js';
import { kubeletFlagKinds } from './flags.js';
import { booleanFlags, unimplementedFlags } from './known-names.js';
import { flagDeprecation } from './flag-deprecations.js';
import { LEGACY_FLAG_DEFAULTS } from './legacy-defaults.js';

/** What each flag does (tskubelet's words; the Go kubelet's reference has upstream's). */
const USAGE: Readonly<Record<string, string>> = {
  address: "The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for all interfaces and IP families)",
  'allowed-unsafe-sysctls': 'Comma-separated unsafe sysctls or sysctl patterns (ending in *) that pods may set',
  'anonymous-auth':
    'Enables anonymous requests to the Kubelet server, as user system:anonymous in group system:unauthenticated',
  'authentication-token-webhook': 'Use the TokenReview API to authenticate bearer tokens',
  'authentication-token-webhook-cache-ttl': 'How long to cache responses from the webhook token authenticator',
  'authorization-mode': 'Authorization mode for the Kubelet server: AlwaysAllow or Webhook (SubjectAccessReview)',
  'authorization-webhook-cache-authorized-ttl': "How long to cache 'authorized' responses from the webhook authorizer",
  'authorization-webhook-cache-unauthorized-ttl':
    "How long to cache 'unauthorized' responses from the webhook authorizer",
  'bootstrap-kubeconfig':
    'Path to a kubeconfig used to request a client certificate when the file named by --kubeconfig does not exist; the new kubeconfig is written there and its certificate and key go to --cert-dir',
  'cert-dir':
    'The directory of the TLS certificates (ignored for serving when --tls-cert-file and --tls-private-key-file are given)',
  'cgroup-driver': "Driver the kubelet uses to manage cgroups on the host: 'cgroupfs' or 'systemd'",
  'cgroup-root': 'Optional root cgroup for pods; empty means the container runtime default',
  'cgroups-per-qos': 'Create the QoS cgroup hierarchy: top-level QoS and pod cgroups',
  'client-ca-file':
    'A request presenting a client certificate signed by one of these authorities is authenticated as the certificate CommonName',
  'cloud-provider': "The provider for cloud services: empty, or 'external' for an out-of-tree cloud controller manager",
  'cluster-dns': 'Comma-separated DNS server IP addresses for the containers of pods with dnsPolicy=ClusterFirst',
  'cluster-domain': "Domain for this cluster: containers search it in addition to the host's search domains",
  config:
    'The Kubelet reads its initial configuration from this file (a KubeletConfiguration); flags override it. Omit it to use the flag defaults',
  'config-dir':
    'A directory of drop-in configuration files (*.conf, in lexical order) merged over --config; flags override them',
  'container-log-max-files': 'The most log files a container may have (at least 2)',
  'container-log-max-size': "The size a container's log file may reach before it is rotated (e.g. 10Mi)",
  'container-log-max-workers': 'How many workers rotate container logs concurrently',
  'container-log-monitor-interval': 'How often container logs are checked for rotation',
  'container-logs-dir':
    'Where the legacy /var/log/containers links to container logs go (tskubelet; upstream hard-codes the path)',
  'container-runtime-endpoint':
    "The CRI runtime's endpoint (unix:///path/to/runtime.sock); empty runs tskubelet's embedded process runtime",
  'cpu-cfs-quota': 'Enforce container CPU limits as CFS quotas',
  'cpu-cfs-quota-period': 'The CFS quota period for CPU limits',
  'cpu-manager-policy': "The CPU manager policy: 'none' or 'static'",
  'cpu-manager-policy-options': 'key=value options that fine-tune the CPU manager policy',
  'cpu-manager-reconcile-period': 'How often the CPU manager reconciles container cpusets',
  'enable-debugging-handlers': 'Serve the endpoints for logs, exec, attach, port-forward and debugging',
  'enable-server': "Enable the Kubelet's server",
  'enforce-node-allocatable':
    "Comma-separated levels of node allocatable to enforce: 'none', or among 'pods', 'system-reserved', 'kube-reserved' and their '-compressible' forms",
  'event-burst': 'How many events may be created at once, within --event-qps (when it is above 0)',
  'event-qps': 'Events created per second at most; 0 means unlimited',
  'eviction-hard': 'Hard eviction thresholds (e.g. memory.available<1Gi): crossing one evicts pods at once',
  'eviction-max-pod-grace-period':
    "The longest termination grace period a soft eviction gives a pod; 0 or less means the pod's own",
  'eviction-minimum-reclaim':
    'The least an eviction reclaims of a resource once its threshold is crossed (e.g. imagefs.available=2Gi)',
  'eviction-pressure-transition-period': 'How long the kubelet waits before leaving an eviction pressure condition',
  'eviction-soft': 'Soft eviction thresholds (e.g. memory.available<1.5Gi): crossed for their grace period, they evict',
  'eviction-soft-grace-period': 'How long each soft eviction threshold must hold (e.g. memory.available=1m30s)',
  'exit-on-lock-contention': 'Exit when another process waits for the file named by --lock-file',
  'fail-cgroupv1': 'Refuse to start on a host using cgroup v1',
  'fail-swap-on': 'Refuse to start when swap is on',
  'feature-gates': 'key=value pairs that turn alpha, beta or experimental features on or off',
  'file-check-frequency': 'How often the static pod path is read again',
  'healthz-bind-address': 'The IP address of the healthz server',
  'healthz-port': 'The port of the localhost healthz endpoint (0 disables it)',
  help: 'help for the kubelet',
  'hostname-override': 'The name the node is known by instead of the host name',
  'http-check-frequency': 'How often the manifest URL is read again',
  'image-credential-provider-bin-dir': 'The directory of the credential provider plugin binaries',
  'image-credential-provider-config': 'The credential provider plugin configuration file (a CredentialProviderConfig)',
  'image-gc-high-threshold': 'Disk usage in percent at which image garbage collection always runs',
  'image-gc-low-threshold': 'Disk usage in percent image garbage collection frees down to',
  'image-service-endpoint': "The CRI image service's endpoint; empty means --container-runtime-endpoint",
  'kube-api-burst': 'Requests to the API server that may be sent at once, within --kube-api-qps',
  'kube-api-qps': 'Requests per second to the API server at most',
  'kube-reserved':
    'Resources reserved for Kubernetes system components (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000)',
  'kube-reserved-cgroup': 'The cgroup of the Kubernetes system components that --kube-reserved caps',
  kubeconfig:
    'Path to a kubeconfig file for connecting to the API server; without it the kubelet runs standalone (static pods only)',
  'kubelet-cgroups': 'Optional absolute name of the cgroup to create and run the Kubelet in',
  'local-storage-capacity-isolation':
    'Account and isolate local ephemeral storage (emptyDir and writable layer limits, ephemeral-storage capacity)',
  'lock-file': 'The file the kubelet holds an exclusive lock on while it runs',
  'logging-format': "Log format: 'text' (klog's) or 'json'",
  'manifest-url': 'URL of static pod manifests to run',
  'manifest-url-header': "HTTP headers for --manifest-url, as 'key:value' pairs separated by commas",
  'max-open-files': 'The number of files the Kubelet process may open',
  'max-parallel-image-pulls': 'Image pulls in flight at most (with --serialize-image-pulls=false)',
  'max-pods': 'The number of pods this Kubelet can run',
  'maximum-dead-containers': 'Old container instances to keep in all; less than 0 means no limit',
  'maximum-dead-containers-per-container': 'Old instances to keep of each container',
  'memory-manager-policy': "The memory manager policy: 'None' or 'Static'",
  'minimum-container-ttl-duration': 'How old a finished container must be before it is garbage collected',
  'minimum-image-ttl-duration': 'How long an unused image stays before it may be garbage collected',
  'node-ip':
    "IP address (or comma-separated IPv4 and IPv6 addresses) of the node; '0.0.0.0' or '::' detects the address",
  'node-labels': 'Labels the node registers with (key=value pairs separated by commas)',
  'node-status-max-images': 'The most images listed in the node status; -1 means no limit',
  'node-status-update-frequency': 'How often the kubelet computes the node status (and posts it when it changed)',
  'oom-score-adj': "The kubelet's oom_score_adj, within [-1000, 1000]",
  'pod-cidr': "The CIDR for pod IP addresses, for a standalone kubelet; in a cluster the node's podCIDR",
  'pod-logs-dir': 'The directory of the pod logs',
  'pod-manifest-path': 'Path to the directory of static pod manifests, or to a single manifest file',
  'pod-max-pids': 'The most processes each pod may run; -1 means no limit',
  'pods-per-core': 'Pods per processor core at most, within --max-pods; 0 means no such limit',
  port: 'The port for the Kubelet to serve on',
  'protect-kernel-defaults':
    'Refuse to start when the kernel tunables differ from what the kubelet needs, instead of leaving them',
  'provider-id': "The node's unique identifier in a machine database (the cloud provider's ID)",
  'read-only-port': 'The read-only port, without authentication or authorization (0 disables it)',
  'register-node': 'Register the node with the API server',
  'register-with-taints': 'Taints the node registers with ("<key>=<value>:<effect>" separated by commas)',
  'registry-burst': 'Image pulls that may start at once, within --registry-qps (when it is above 0)',
  'registry-qps': 'Image pulls per second at most; 0 means unlimited',
  'reserved-cpus': 'CPUs reserved for the system and Kubernetes (e.g. 0-3 or 0,2,4,6); overrides the cpu reservations',
  'reserved-memory':
    'Memory reserved per NUMA node for the memory manager (e.g. 0:memory=1Gi,hugepages-1M=2Gi;1:memory=2Gi)',
  'resolv-conf': 'The resolver configuration the containers DNS configuration starts from',
  'root-dir': 'Directory for the kubelet files (pods, volumes, plugins, checkpoints)',
  'rotate-certificates': 'Rotate the client certificate, requesting a new one from the API server as it expires',
  'rotate-server-certificates': 'Request the serving certificate from the API server and rotate it as it expires',
  runonce: 'Run the pods of the static pod path or manifest URL, then exit',
  'runtime-cgroups': "The container runtime's cgroup, for its figures in the summary",
  'runtime-request-timeout': 'The timeout of every CRI request except the long-running ones (pull, logs, exec, attach)',
  'seccomp-default': 'Use RuntimeDefault as the seccomp profile of every workload that asks for none',
  'serialize-image-pulls': 'Pull one image at a time',
  'shutdown-grace-period': 'How long the node delays its shutdown for its pods to stop (graceful node shutdown)',
  'streaming-connection-idle-timeout': 'How long a streaming connection may stay idle before it is closed; 0 never',
  'sync-frequency': 'The longest time between syncs of the running containers and the configuration',
  'system-cgroups': 'Absolute name of the cgroup for the non-kernel processes not already in a container',
  'system-reserved': 'Resources reserved for the operating system (e.g. cpu=200m,memory=500Mi,pid=1000)',
  'system-reserved-cgroup': 'The cgroup of the operating system components that --system-reserved caps',
  'tls-cert-file':
    'The serving certificate (the CA certificates after it); without it and --tls-private-key-file a self-signed one goes to --cert-dir',
  'tls-cipher-suites': 'Comma-separated cipher suites for the server; empty means the defaults',
  'tls-min-version': 'Minimum TLS version: VersionTLS12 or VersionTLS13',
  'tls-private-key-file': 'The private key of --tls-cert-file',
  'topology-manager-policy': "The topology manager policy: 'none', 'best-effort', 'restricted' or 'single-numa-node'",
  'topology-manager-policy-options': 'key=value options that fine-tune the topology manager policy',
  'topology-manager-scope': "Scope of the topology hints: 'container' or 'pod'",
  v: 'number for the log level verbosity',
  version: '--version, --version=raw prints version information and quits',
  'volume-stats-agg-period': 'How often the disk usage of volumes is measured; 0 turns it off',
};

/** The value types pflag names where a flag's kind alone does not say it. */
const TYPE_OF: Readonly<Record<string, string>> = {
  address: 'ip',
  'healthz-bind-address': 'ip',
  'max-open-files': 'int',
  'pod-max-pids': 'int',
  v: 'Level',
  version: 'version[=true]',
  'reserved-memory': 'reserved-memory',
  'log-flush-frequency': 'duration',
  'log-json-info-buffer-size': 'quantity',
  'log-text-info-buffer-size': 'quantity',
  'qos-reserved': 'mapStringString',
  vmodule: 'pattern=N,...',
};

/** pflag's type names by kind ('' for a bool: pflag prints none). */
const KIND_TYPE: Readonly<Record<Kind, string>> = {
  string: 'string',
  int: 'int32',
  number: 'int32',
  bool: '',
  duration: 'duration',
  headers: 'colonSeparatedMultimapStringString',
  list: 'strings',
  map: 'mapStringString',
  eviction: 'mapStringString',
  taints: '[]api.Taint',
  gates: 'mapStringBool',
  version: 'version',
  reservedMemory: 'reserved-memory',
};

/** The defaults of the flags that set no config field. */
const KUBELET_FLAG_DEFAULTS: Readonly<Record<string, unknown>> = {
  'cert-dir': '/var/lib/kubelet/pki',
  'root-dir': '/var/lib/kubelet',
  'container-logs-dir': '/var/log/containers',
  'logging-format': 'text',
  'maximum-dead-containers': -1,
  'maximum-dead-containers-per-container': 1,
};

/** A default as pflag prints it (quoted for a `string` flag), or '' for a zero value (pflag prints none). */
function defaultText(kind: Kind, type: string, value: unknown): string {
  if (value === undefined || value === null || value === '' || value === 0 || value === false || value === '0s')
    return '';
  if (Array.isArray(value)) return value.length ? `[${value.join(',')}]` : '';
  if (typeof value === 'object') {
    const separator = kind === 'eviction' ? '<' : '=';
    const pairs = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return pairs.map(([k, v]) => `${k}${separator}${typeof v === 'string' ? v : JSON.stringify(v)}`).join(',');
  }
  if (type === 'string') return JSON.stringify(value);
  return typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string' ? String(value) : '';
}

/** The value at `path` of `defaults`, the configuration when no file and no flag set it. */
function configDefault(defaults: Record<string, unknown>, path: readonly string[]): unknown {
  return path.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], defaults);
}

/** One flag's help line before alignment: the flag and type, then its text (split by a NUL, as pflag does). */
function flagLine(name: string, defaults: Record<string, unknown>): string {
  const config = configFlags[name];
  // An unimplemented flag takes a string unless it is a switch.
  const kind: Kind = config?.kind ?? kubeletFlagKinds[name] ?? (booleanFlags.has(name) ? 'bool' : 'string');
  const type = TYPE_OF[name] ?? KIND_TYPE[kind];
  const flag = name === 'help' ? '  -h, --help' : name === 'v' ? '  -v, --v' : `      --${name}`;
  let usage = USAGE[name] ?? 'Accepted for compatibility with the Go kubelet; tskubelet does not implement it yet';
  const value = config ? configDefault(defaults, config.path) : KUBELET_FLAG_DEFAULTS[name];
  const shown = defaultText(kind, type, value);
  if (shown) usage += ` (default ${shown})`;
  const deprecation = flagDeprecation(name);
  if (deprecation) usage += ` (DEPRECATED: ${deprecation})`;
  return `${flag}${type ? ` ${type}` : ''}\0${usage}`;
}

/** The help text, for the program named `program` (`kubelet` where the Debian package installs it). */
export function flagHelp(program = 'tskubelet'): string {
  const names = [...new Set([...Object.keys(configFlags), ...Object.keys(kubeletFlagKinds), ...unimplementedFlags])];
  const defaults = kubeletConfigSchema.parse(LEGACY_FLAG_DEFAULTS) as Record<string, unknown>;
  const lines = names.sort().map((name) => flagLine(name, defaults));
  const width = Math.max(...lines.map((l) => l.indexOf('\0')));
  const body = lines.map((l) => {
    const split = l.indexOf('\0');
    return `${l.slice(0, split)}${' '.repeat(width - split + 2)}${l.slice(split + 1)}`;
  });
  return (
    `tskubelet is a Kubernetes node agent: it runs the pods of the API server, of a static pod path and of a\n` +
    `manifest URL through a CRI runtime (containerd, or without one its embedded process runtime), and reports\n` +
    `them and the node. Its flags, configuration file and defaults are the Go kubelet's.\n\n` +
    `Usage:\n  ${program} [flags]\n  ${program} process-runtime --listen unix:///path.sock [--root-dir DIR]\n\n` +
    `Flags:\n${body.join('\n')}\n`
  );
}
