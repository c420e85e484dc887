/**
 * The static policy's options (`cpuManagerPolicyOptions`), checked as upstream's
 * NewStaticPolicyOptions (1.32): beta options (full-pcpus-only, distribute-cpus-across-numa) need
 * CPUManagerPolicyBetaOptions (on by default), alpha ones CPUManagerPolicyAlphaOptions (off);
 * unknown names and bad values are refused with upstream's messages. `full-pcpus-only` is
 * implemented; the others are reported as not implemented. Pure.
 */

const ALPHA = [
  'align-by-socket',
  'distribute-cpus-across-cores',
  'strict-cpu-reservation',
  'prefer-align-cpus-by-uncorecache',
];
const BETA = ['full-pcpus-only', 'distribute-cpus-across-numa'];
const BOOLEAN = ['full-pcpus-only', ...ALPHA, 'distribute-cpus-across-numa'];

export interface StaticPolicyOptions {
  /** full-pcpus-only: a container gets whole physical cores (SMT siblings together) or is refused. */
  fullPhysicalCpusOnly: boolean;
  /** Options accepted that tskubelet does not act on. */
  notImplemented: string[];
}

/** Go's strconv.ParseBool. */
function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** The options, or upstream's error (throws). */
export function parseStaticPolicyOptions(
  options: Readonly<Record<string, string>>,
  gates: { alpha: boolean; beta: boolean },
): StaticPolicyOptions {
  const out: StaticPolicyOptions = { fullPhysicalCpusOnly: false, notImplemented: [] };
  for (const [name, value] of Object.entries(options).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!ALPHA.includes(name) && !BETA.includes(name))
      throw new Error(`unknown CPU Manager Policy option: ${JSON.stringify(name)}`);
    if (ALPHA.includes(name) && !gates.alpha)
      throw new Error(
        `CPU Manager Policy Alpha-level Options not enabled, but option ${JSON.stringify(name)} provided`,
      );
    if (BETA.includes(name) && !gates.beta)
      throw new Error(`CPU Manager Policy Beta-level Options not enabled, but option ${JSON.stringify(name)} provided`);
    const b = BOOLEAN.includes(name) ? parseBool(value) : undefined;
    if (b === undefined)
      throw new Error(
        `bad value for option ${JSON.stringify(name)}: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
      );
    if (name === 'full-pcpus-only') out.fullPhysicalCpusOnly = b;
    else if (b) out.notImplemented.push(name);
  }
  return out;
}

/** Go's %v of a map[string]string: `map[a:1 b:2]`, keys sorted. */
export const goMap = (m: Readonly<Record<string, string>>): string =>
  `map[${Object.keys(m)
    .sort()
    .map((k) => `${k}:${m[k]}`)
    .join(' ')}]`;
