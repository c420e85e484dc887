/**
 * The static policy's options (`cpuManagerPolicyOptions`), checked as upstream's
 * NewStaticPolicyOptions: full-pcpus-only is GA; the beta options (strict-cpu-reservation,
 * distribute-cpus-across-numa, prefer-align-cpus-by-uncorecache) need CPUManagerPolicyBetaOptions
 * (on by default), the alpha ones CPUManagerPolicyAlphaOptions (off); unknown names, bad values
 * and options that exclude each other are refused with upstream's messages. Every option of
 * v1.36 is implemented. Pure.
 */
import { parseBoolError, parseGoBool } from '../../lib/go-strconv.js';

const STABLE = ['full-pcpus-only'];
const BETA = ['strict-cpu-reservation', 'distribute-cpus-across-numa', 'prefer-align-cpus-by-uncorecache'];
const ALPHA = ['align-by-socket', 'distribute-cpus-across-cores'];
/** Pairs upstream refuses together. */
const EXCLUSIVE = [
  ['full-pcpus-only', 'distribute-cpus-across-cores'],
  ['distribute-cpus-across-numa', 'distribute-cpus-across-cores'],
  ['prefer-align-cpus-by-uncorecache', 'distribute-cpus-across-cores'],
  ['prefer-align-cpus-by-uncorecache', 'distribute-cpus-across-numa'],
];

export interface StaticPolicyOptions {
  /** full-pcpus-only: a container gets whole physical cores (SMT siblings together) or is refused. */
  fullPhysicalCpusOnly: boolean;
  /** strict-cpu-reservation: the reserved CPUs are out of the shared pool too, for the system alone. */
  strictCpuReservation: boolean;
  /** distribute-cpus-across-numa: a request one NUMA node cannot hold is spread evenly (cpu-distribution.ts). */
  distributeCpusAcrossNuma: boolean;
  /**
   * prefer-align-cpus-by-uncorecache: whole uncore caches, or a request within one, before cores (cpu-assignment.ts).
   */
  preferAlignByUncoreCache: boolean;
  /** align-by-socket: the topology manager's NUMA nodes widened to their sockets; socket-aligned hints preferred. */
  alignBySocket: boolean;
  /** distribute-cpus-across-cores: no whole cores taken, CPUs in ID order per socket (cpu-assignment.ts). */
  distributeCpusAcrossCores: boolean;
}

/** Every option off: the none policy's, and the static policy's before its options are read. */
export const NO_STATIC_POLICY_OPTIONS: Readonly<StaticPolicyOptions> = {
  fullPhysicalCpusOnly: false,
  strictCpuReservation: false,
  distributeCpusAcrossNuma: false,
  preferAlignByUncoreCache: false,
  alignBySocket: false,
  distributeCpusAcrossCores: false,
};

/** The options, or upstream's error (throws). */
export function parseStaticPolicyOptions(
  options: Readonly<Record<string, string>>,
  gates: { alpha: boolean; beta: boolean },
): StaticPolicyOptions {
  const out: StaticPolicyOptions = { ...NO_STATIC_POLICY_OPTIONS };
  const enabled = new Set<string>();
  for (const [name, value] of Object.entries(options).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!STABLE.includes(name) && !ALPHA.includes(name) && !BETA.includes(name))
      throw new Error(`unknown CPU Manager Policy option: ${JSON.stringify(name)}`);
    if (ALPHA.includes(name) && !gates.alpha)
      throw new Error(
        `CPU Manager Policy Alpha-level Options not enabled, but option ${JSON.stringify(name)} provided`,
      );
    if (BETA.includes(name) && !gates.beta)
      throw new Error(`CPU Manager Policy Beta-level Options not enabled, but option ${JSON.stringify(name)} provided`);
    const b = parseGoBool(value);
    if (b === undefined) throw new Error(`bad value for option ${JSON.stringify(name)}: ${parseBoolError(value)}`);
    if (b) enabled.add(name);
    if (name === 'full-pcpus-only') out.fullPhysicalCpusOnly = b;
    else if (name === 'strict-cpu-reservation') out.strictCpuReservation = b;
    else if (name === 'distribute-cpus-across-numa') out.distributeCpusAcrossNuma = b;
    else if (name === 'prefer-align-cpus-by-uncorecache') out.preferAlignByUncoreCache = b;
    else if (name === 'align-by-socket') out.alignBySocket = b;
    else if (name === 'distribute-cpus-across-cores') out.distributeCpusAcrossCores = b;
  }
  for (const [a, b] of EXCLUSIVE)
    if (enabled.has(a) && enabled.has(b))
      throw new Error(`static policy options ${a} and ${b} can not be used at the same time`);
  return out;
}

/** Go's %v of a map[string]string: `map[a:1 b:2]`, keys sorted. */
export const goMap = (m: Readonly<Record<string, string>>): string =>
  `map[${Object.keys(m)
    .sort()
    .map((k) => `${k}:${m[k]}`)
    .join(' ')}]`;

/**
 * Upstream's ValidateStaticPolicyOptions: align-by-socket is refused under the single-numa-node
 * topology policy and on hardware with more sockets than NUMA nodes (throws upstream's message).
 */
export function validateStaticPolicyOptions(
  options: StaticPolicyOptions,
  machine: { topologyPolicy: string; sockets: number; numaNodes: number },
): void {
  if (!options.alignBySocket) return;
  if (machine.topologyPolicy === 'single-numa-node')
    throw new Error(
      'Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option',
    );
  if (machine.sockets > machine.numaNodes)
    throw new Error(
      'Align by socket is not compatible with hardware where number of sockets are more than number of NUMA',
    );
}
