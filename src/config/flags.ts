/**
 * Command-line flags with the Go kubelet's names (pflag syntax: `--name=value`, `--name value`,
 * `--bool`, `--bool=false`). Implemented flags map onto KubeletConfiguration paths or kubelet
 * flags; known-but-unimplemented flags are collected for a warning; anything else is an error.
 */
import { booleanFlags, unimplementedFlags } from './known-names.js';
import { flagDeprecation } from './flag-deprecations.js';
import { configFlags, type Kind } from './config-flags.js';
import { parseGoBool } from '../lib/go-strconv.js';
import { parseReservedMemoryFlag, type MemoryReservation } from '../agent/memorymanager/reserved-memory.js';

/** Flags that are not part of KubeletConfiguration. */
export const kubeletFlagKinds: Record<string, Kind> = {
  config: 'string',
  'config-dir': 'string',
  kubeconfig: 'string',
  'bootstrap-kubeconfig': 'string',
  'cert-dir': 'string',
  'node-labels': 'map',
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
  // An exclusive flock on this file for the kubelet's life (lib/file-lock.ts); with the next, the kubelet exits when
  // another process waits for it.
  'lock-file': 'string',
  'exit-on-lock-contention': 'bool',
  // tskubelet's own: where the legacy container log links go (upstream hard-codes /var/log/containers).
  'container-logs-dir': 'string',
  v: 'int',
  'logging-format': 'string',
  help: 'bool',
  // upstream's version.Value: true, false or raw.
  version: 'version',
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
    lockFile?: string;
    exitOnLockContention?: boolean;
    v?: number;
    loggingFormat?: string;
    help?: boolean;
    version?: boolean | 'raw';
  };
  /** Known upstream flags that are accepted but not implemented. */
  unimplemented: string[];
  /** Positional arguments (subcommands). */
  positional: string[];
  /** pflag's notice for each deprecated flag given, in order (`Flag --address has been deprecated, …`). */
  deprecations: string[];
}

/** A flag error: the message names the flag and the reason. */
export class FlagError extends Error {
  /** The deprecation notices of the flags before the bad one, which pflag has printed by then. */
  deprecations: string[] = [];
}

function convert(name: string, kind: Kind, raw: string): unknown {
  if (kind === 'int') {
    if (!/^-?\d+$/.test(raw)) throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be an integer`);
    return Number(raw);
  }
  if (kind === 'number') {
    if (!/^-?(\d+\.?\d*|\.\d+)(e-?\d+)?$/i.test(raw))
      throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be a number`);
    return Number(raw);
  }
  if (kind === 'version') {
    if (raw === 'raw') return 'raw';
    const on = parseGoBool(raw);
    if (on === undefined)
      throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be true, false or raw`);
    return on;
  }
  if (kind === 'bool') {
    const on = parseGoBool(raw);
    if (on === undefined) throw new FlagError(`invalid argument "${raw}" for "--${name}" flag: must be a boolean`);
    return on;
  }
  if (kind === 'gates') {
    // The map kind's key=value pairs, each value a Go boolean.
    const bad = () =>
      new FlagError(`invalid argument "${raw}" for "--${name}" flag: want "Gate=true|false" pairs separated by commas`);
    let pairs: Record<string, string>;
    try {
      pairs = convert(name, 'map', raw) as Record<string, string>;
    } catch {
      throw bad();
    }
    const out: Record<string, boolean> = {};
    for (const [gate, value] of Object.entries(pairs)) {
      const on = parseGoBool(value.trim());
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
      if (i <= 0)
        throw new FlagError(
          `invalid argument "${raw}" for "--${name}" flag: want "key${sep}value" pairs separated by commas`,
        );
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
          throw new FlagError(
            `invalid argument "${raw}" for "--${name}" flag: want key[=value]:Effect with Effect NoSchedule, PreferNoSchedule or NoExecute`,
          );
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
  const out: ParsedFlags = { config: {}, flags: {}, unimplemented: [], positional: [], deprecations: [] };
  try {
    parseInto(out, argv);
  } catch (err) {
    if (err instanceof FlagError) err.deprecations = out.deprecations;
    throw err;
  }
  return out;
}

/** Parses `argv` into `out`, flag by flag (what a bad flag throws leaves `out` as far as it got). */
function parseInto(out: ParsedFlags, argv: string[]): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-') {
      out.positional.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const written = eq >= 0 ? body.slice(0, eq) : body;
    // `-h`, --help's shorthand, as upstream's cleanFlagSet.BoolP("help", "h", …).
    const name = written === 'h' && !arg.startsWith('--') ? 'help' : written;
    let value: string | undefined = eq >= 0 ? body.slice(eq + 1) : undefined;
    const known: { kind: Kind; path?: string[] } | undefined =
      configFlags[name] ?? (kubeletFlagKinds[name] ? { kind: kubeletFlagKinds[name] } : undefined);
    const isBool = known ? known.kind === 'bool' || known.kind === 'version' : booleanFlags.has(name);
    if (!known && !unimplementedFlags.has(name) && !booleanFlags.has(name))
      throw new FlagError(`unknown flag: --${name}`);
    if (value === undefined) {
      if (isBool) value = 'true';
      else {
        if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: --${name}`);
        value = argv[++i];
      }
    }
    if (!known) {
      out.unimplemented.push(name);
      noteDeprecation(out, name);
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
      } else if (known.kind === 'reservedMemory') {
        // Repeated flags add up, as upstream's ReservedMemoryVar; an empty value clears them.
        let reservations: MemoryReservation[];
        try {
          reservations = parseReservedMemoryFlag(value);
        } catch (err) {
          throw new FlagError(`invalid argument "${value}" for "--${name}" flag: ${(err as Error).message}`);
        }
        const sofar = (out.config.reservedMemory as MemoryReservation[] | undefined) ?? [];
        out.config.reservedMemory = value === '' ? [] : [...sofar, ...reservations];
      } else setPath(out.config, known.path, convert(name, known.kind, value!));
    } else {
      (out.flags as Record<string, unknown>)[camel(name)] = convert(name, known.kind, value!);
    }
    noteDeprecation(out, name);
  }
}

/** pflag's notice once a deprecated flag is set. */
function noteDeprecation(out: ParsedFlags, name: string): void {
  const deprecation = flagDeprecation(name);
  if (deprecation) out.deprecations.push(`Flag --${name} has been deprecated, ${deprecation}`);
}
