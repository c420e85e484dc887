/**
 * NUMA distances for `prefer-closest-numa-nodes` (upstream topologymanager/numa_info.go): the
 * kernel's distance table (`/sys/devices/system/node/node<N>/distance`: node N's distance to each
 * node, 10 to itself), and upstream's choice between two NUMA node sets — the narrower when they
 * differ in size, else the one whose nodes are closer on average, else the lower numbered.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Node ID → its distance to each node, by node ID. */
export type NumaDistances = ReadonlyMap<number, readonly number[]>;

/** Reads the distances of `nodes`; throws with upstream's message when one cannot be read. */
export function readNumaDistances(nodes: readonly number[], sysNode = '/sys/devices/system/node'): NumaDistances {
  const out = new Map<number, number[]>();
  for (const node of nodes) {
    try {
      const row = readFileSync(join(sysNode, `node${node}`, 'distance'), 'utf8')
        .trim()
        .split(/\s+/)
        .map(Number);
      if (!row.length || row.some((d) => !Number.isInteger(d))) throw new Error('not a distance list');
      out.set(node, row);
    } catch (err) {
      throw new Error(
        `cannot discover NUMA topology: error getting NUMA distances from sysfs: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }
  return out;
}

/** The average distance between the nodes of `nodes`, each pair counted both ways and each node to itself. Pure. */
export function averageDistance(distances: NumaDistances, nodes: readonly number[]): number {
  if (!nodes.length) return 0;
  let sum = 0;
  for (const from of nodes) for (const to of nodes) sum += distances.get(from)?.[to] ?? 0;
  return sum / (nodes.length * nodes.length);
}
