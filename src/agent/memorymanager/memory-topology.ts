/**
 * The memory of each NUMA node, as cAdvisor reports it in MachineInfo.Topology for upstream's
 * memory manager: a node's `MemTotal` (`/sys/devices/system/node/node<N>/meminfo`, kB) and the huge
 * pages the kernel holds on it (`node<N>/hugepages/hugepages-<size>kB/nr_hugepages`). A machine
 * without NUMA nodes in sysfs is one node 0 with the machine's memory and huge pages, as cAdvisor
 * makes it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hugePageSizeKb, type HugePagePool } from '../nodestatus/machine-info.js';

export interface NumaNodeMemory {
  id: number;
  /** MemTotal in bytes. */
  memoryBytes: number;
  /** Each huge page size on the node, in the kernel's directory order (smallest name first). */
  hugePages: HugePagePool[];
}

const readText = (path: string) => readFileSync(path, 'utf8');

/** `MemTotal` of a meminfo text in bytes (`Node 0 MemTotal:  6777036 kB` or `MemTotal:  6777036 kB`). */
export function memTotalBytes(meminfo: string): number | undefined {
  const match = /(?:^|\n)(?:Node \d+ )?MemTotal:\s+(\d+) kB/.exec(meminfo);
  return match ? Number(match[1]) * 1024 : undefined;
}

/** The huge page pools under `dir` (a `hugepages` directory), sorted by name as Go's ReadDir lists them. */
function hugePagePools(dir: string): HugePagePool[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const pools: HugePagePool[] = [];
  for (const name of names) {
    const pageSizeKb = hugePageSizeKb(name);
    if (pageSizeKb === undefined) continue;
    const pages = Number(readText(join(dir, name, 'nr_hugepages')).trim());
    pools.push({ pageSizeKb, pages: Number.isSafeInteger(pages) && pages > 0 ? pages : 0 });
  }
  return pools;
}

/**
 * The IDs of the machine's NUMA nodes in sysfs, ascending — those without CPUs (memory only)
 * too, as cAdvisor lists them for upstream's topology and memory managers; none without sysfs.
 */
export function listNumaNodes(sysNodeDir = '/sys/devices/system/node'): number[] {
  try {
    return readdirSync(sysNodeDir)
      .map((name) => /^node(\d+)$/.exec(name)?.[1])
      .filter((id): id is string => id !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  } catch {
    return [];
  }
}

/** The NUMA nodes' memory, by node ID; throws when a node's meminfo cannot be read. */
export function readNumaNodeMemory(
  sysNodeDir = '/sys/devices/system/node',
  procDir = '/proc',
  hugePagesDir = '/sys/kernel/mm/hugepages',
): NumaNodeMemory[] {
  const ids = listNumaNodes(sysNodeDir);
  // No NUMA nodes in sysfs: the machine is one node.
  if (!ids.length) {
    const memoryBytes = memTotalBytes(readText(join(procDir, 'meminfo')));
    if (memoryBytes === undefined) throw new Error(`no MemTotal in ${join(procDir, 'meminfo')}`);
    return [{ id: 0, memoryBytes, hugePages: hugePagePools(hugePagesDir) }];
  }
  return ids.map((id) => {
    const nodeDir = join(sysNodeDir, `node${id}`);
    const memoryBytes = memTotalBytes(readText(join(nodeDir, 'meminfo')));
    if (memoryBytes === undefined) throw new Error(`no MemTotal in ${join(nodeDir, 'meminfo')}`);
    return { id, memoryBytes, hugePages: hugePagePools(join(nodeDir, 'hugepages')) };
  });
}
