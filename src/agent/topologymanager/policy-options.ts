/**
 * `topologyManagerPolicyOptions` (upstream topologymanager/policy_options.go, v1.36: both options
 * GA): `prefer-closest-numa-nodes` (between NUMA node sets of one size, the one whose nodes are
 * closest to each other on average, by the machine's NUMA distances, instead of the lowest
 * numbered) and `max-allowable-numa-nodes` (how many NUMA nodes the policies may compare: the
 * merge tries every combination, so upstream refuses machines with more than 8 unless raised).
 * An unknown option or a bad value stops the start with upstream's message. Pure.
 */
import { goAtoi, parseBoolError, parseGoBool } from '../../lib/go-strconv.js';

export const PREFER_CLOSEST_NUMA_NODES = 'prefer-closest-numa-nodes';
export const MAX_ALLOWABLE_NUMA_NODES = 'max-allowable-numa-nodes';
export const DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8;

export interface TopologyPolicyOptions {
  preferClosestNuma: boolean;
  maxAllowableNumaNodes: number;
}

/** The options as the topology manager uses them; throws with upstream's message. */
export function topologyPolicyOptions(options: Readonly<Record<string, string>> = {}): TopologyPolicyOptions {
  const parsed: TopologyPolicyOptions = {
    preferClosestNuma: false,
    maxAllowableNumaNodes: DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
  };
  for (const [name, value] of Object.entries(options)) {
    if (name === PREFER_CLOSEST_NUMA_NODES) {
      const prefer = parseGoBool(value);
      if (prefer === undefined) throw new Error(`bad value for option "${name}": ${parseBoolError(value)}`);
      parsed.preferClosestNuma = prefer;
    } else if (name === MAX_ALLOWABLE_NUMA_NODES) {
      let count: number;
      try {
        count = goAtoi(value);
      } catch (err) {
        throw new Error(`unable to convert policy option to integer "${name}": ${(err as Error).message}`, {
          cause: err,
        });
      }
      if (count < DEFAULT_MAX_ALLOWABLE_NUMA_NODES)
        throw new Error(`the minimum value of "${name}" should not be less than ${DEFAULT_MAX_ALLOWABLE_NUMA_NODES}`);
      parsed.maxAllowableNumaNodes = count;
    } else throw new Error(`unknown Topology Manager Policy option: "${name}"`);
  }
  return parsed;
}
