/**
 * Topology hints and their merge across hint providers (upstream topologymanager policy.go and
 * the best-effort / restricted / single-numa-node policies, with `prefer-closest-numa-nodes`:
 * policy-options.ts). A hint is a
 * set of NUMA nodes (undefined: any) and whether it is preferred; each provider gives a list per
 * resource it allocates (the CPU manager one for `cpu`, the device manager one per device
 * resource). The merge takes one hint of every list, ANDs their NUMA nodes, and keeps the best
 * such combination. Pure.
 */
import { averageDistance, type NumaDistances } from './numa-distances.js';

export interface TopologyHint {
  /** NUMA node IDs, ascending; undefined: no preference. */
  numaNodes?: readonly number[];
  preferred: boolean;
}

export type TopologyPolicy = 'none' | 'best-effort' | 'restricted' | 'single-numa-node';

/**
 * One provider's hints for one resource: undefined for no preference, an empty list when the
 * resource cannot be had on any NUMA nodes.
 */
export type ResourceHints = readonly TopologyHint[] | undefined;

/**
 * Every non-empty set of `nodes`, smallest first, each size in lexicographic order (upstream bitmask.IterateBitMasks).
 */
export function numaMasks(nodes: readonly number[]): number[][] {
  const out: number[][] = [];
  const pick = (start: number, size: number, acc: number[]) => {
    if (acc.length === size) return void out.push([...acc]);
    for (let i = start; i < nodes.length; i++) pick(i + 1, size, [...acc, nodes[i]]);
  };
  for (let size = 1; size <= nodes.length; size++) pick(0, size, []);
  return out;
}

/** A set of NUMA nodes as upstream's bitmask compares them: as the number with those bits set. */
const maskValue = (nodes: readonly number[]) => nodes.reduce((sum, n) => sum + 2 ** n, 0);

/** a narrower than b: fewer nodes, or as many and a lower mask (upstream IsNarrowerThan). */
export const narrower = (a: readonly number[], b: readonly number[]): boolean =>
  a.length !== b.length ? a.length < b.length : maskValue(a) < maskValue(b);

const sameNodes = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((n, i) => n === b[i]);

/** A merged hint: its NUMA nodes always set (the machine's when no hint narrowed them). */
interface Merged {
  nodes: readonly number[];
  preferred: boolean;
}

/**
 * One hint of each list merged (upstream mergePermutation): the NUMA nodes all of them allow,
 * preferred when each is preferred and every one with NUMA nodes names the same ones.
 */
function mergePermutation(allNodes: readonly number[], permutation: readonly TopologyHint[]): Merged {
  let nodes = allNodes;
  let preferred = true;
  let first: readonly number[] | undefined;
  for (const hint of permutation) {
    if (hint.numaNodes) {
      first ??= hint.numaNodes;
      if (!sameNodes(hint.numaNodes, first)) preferred = false;
      nodes = nodes.filter((n) => hint.numaNodes!.includes(n));
    }
    if (!hint.preferred) preferred = false;
  }
  return { nodes, preferred };
}

/**
 * Whether NUMA node set `a` is the better of two when nothing else decides (upstream
 * NUMAInfo.Narrowest): the narrower, the lower numbered when as wide.
 */
type MaskOrder = (a: readonly number[], b: readonly number[]) => boolean;

/**
 * `prefer-closest-numa-nodes` (upstream NUMAInfo.Closest): the narrower when the sizes differ;
 * else the smaller average distance between the nodes; the lower numbered when as close.
 */
export function closerThan(distances: NumaDistances): MaskOrder {
  return (a, b) => {
    if (a.length !== b.length) return narrower(a, b);
    const [da, db] = [averageDistance(distances, a), averageDistance(distances, b)];
    return da === db ? maskValue(a) < maskValue(b) : da < db;
  };
}

/**
 * Which of two merged hints is better (upstream HintMerger.compare): a preferred one over one
 * that is not; between preferred ones the fitter by `order`; between unpreferred ones the one
 * closest to (not above) `bestUnpreferredCount` nodes, the fitter when as close.
 */
function better(
  current: Merged | undefined,
  candidate: Merged,
  bestUnpreferredCount: number,
  order: MaskOrder,
): Merged | undefined {
  if (!candidate.nodes.length) return current;
  if (!current) return candidate;
  const fitter = () =>
    !sameNodes(candidate.nodes, current.nodes) && order(candidate.nodes, current.nodes) ? candidate : current;
  if (current.preferred !== candidate.preferred) return current.preferred ? current : candidate;
  if (current.preferred) return fitter();
  const [now, next] = [current.nodes.length, candidate.nodes.length];
  if (now > bestUnpreferredCount) return fitter();
  if (now === bestUnpreferredCount) return next === bestUnpreferredCount ? fitter() : current;
  if (next > bestUnpreferredCount) return current;
  if (next === bestUnpreferredCount) return candidate;
  if (next !== now) return next > now ? candidate : current;
  return fitter();
}

/**
 * The best hint for the resources' hints under `policy`, and whether the pod is admitted
 * (upstream Policy.Merge and canAdmitPodResult). single-numa-node keeps only no-preference and
 * single-node hints that are preferred, and a best hint of the whole machine means no affinity;
 * restricted and single-numa-node admit only a preferred best hint; best-effort always admits.
 * With `distances` (prefer-closest-numa-nodes) hints of a size are told apart by how close their
 * nodes are, except under single-numa-node, whose hints have one node each.
 */
export function mergeHints(
  policy: Exclude<TopologyPolicy, 'none'>,
  allNodes: readonly number[],
  resources: readonly ResourceHints[],
  distances?: NumaDistances,
): { hint: TopologyHint; admit: boolean } {
  const order = distances && policy !== 'single-numa-node' ? closerThan(distances) : narrower;
  let lists: TopologyHint[][] = resources.map((hints) =>
    hints === undefined ? [{ preferred: true }] : hints.length ? [...hints] : [{ preferred: false }],
  );
  if (policy === 'single-numa-node')
    lists = lists.map((hints) =>
      hints.filter((h) => h.preferred && (h.numaNodes === undefined || h.numaNodes.length === 1)),
    );
  // The most NUMA nodes any resource needs at least (upstream maxOfMinAffinityCounts).
  const bestUnpreferredCount = Math.max(
    0,
    ...lists.flatMap((hints) => {
      const counts = hints.flatMap((h) => (h.numaNodes ? [h.numaNodes.length] : []));
      return counts.length ? [Math.min(...counts)] : [];
    }),
  );
  let best: Merged | undefined;
  const iterate = (i: number, permutation: TopologyHint[]) => {
    if (i === lists.length) {
      best = better(best, mergePermutation(allNodes, permutation), bestUnpreferredCount, order);
      return;
    }
    for (const hint of lists[i]) iterate(i + 1, [...permutation, hint]);
  };
  iterate(0, []);
  const result = best ?? { nodes: allNodes, preferred: false };
  const any = policy === 'single-numa-node' && sameNodes(result.nodes, allNodes);
  const hint: TopologyHint = any
    ? { preferred: result.preferred }
    : { numaNodes: result.nodes, preferred: result.preferred };
  return { hint, admit: policy === 'best-effort' || hint.preferred };
}
