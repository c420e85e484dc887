/**
 * The machine's CPU topology as the CPU manager sees it (upstream cpumanager/topology.Discover
 * over cAdvisor's machine info): for each online logical CPU its core (the lowest CPU ID of its
 * hyperthread siblings), socket, NUMA node and uncore (last-level, L3) cache, read from
 * /sys/devices/system/cpu.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuSet, parseCpuSet, type CpuSet } from '../../lib/cpuset.js';

export interface CpuInfo {
  coreId: number;
  socketId: number;
  numaNodeId: number;
  /** The ID of its level-3 cache; absent: none known, the socket stands for it (upstream getUncoreCacheID). */
  uncoreCacheId?: number;
}

/** CPU ID → where it is. */
export type CpuTopology = ReadonlyMap<number, CpuInfo>;

/** The CPUs of the topology. Pure. */
export const topologyCpus = (t: CpuTopology): CpuSet => cpuSet(t.keys());

/** Hyperthreads per core (upstream CPUsPerCore: CPUs / cores). Pure. */
export function cpusPerCore(t: CpuTopology): number {
  const cores = new Set([...t.values()].map((c) => c.coreId));
  return cores.size ? Math.round(t.size / cores.size) : 0;
}

/** Reads the topology of the online CPUs under `sysCpu`; empty when it cannot be read. */
export function readCpuTopology(sysCpu = '/sys/devices/system/cpu'): CpuTopology {
  const out = new Map<number, CpuInfo>();
  let online: CpuSet;
  try {
    online = parseCpuSet(readFileSync(join(sysCpu, 'online'), 'utf8'));
  } catch {
    return out;
  }
  const read = (cpu: number, file: string) => readFileSync(join(sysCpu, `cpu${cpu}`, file), 'utf8').trim();
  for (const cpu of online) {
    try {
      const siblings = parseCpuSet(read(cpu, 'topology/thread_siblings_list'));
      const node = readdirSync(join(sysCpu, `cpu${cpu}`))
        .map((n) => /^node(\d+)$/.exec(n)?.[1])
        .find((n) => n !== undefined);
      const uncoreCacheId = levelThreeCacheId(join(sysCpu, `cpu${cpu}`, 'cache'));
      out.set(cpu, {
        coreId: Math.min(cpu, ...siblings),
        socketId: Number(read(cpu, 'topology/physical_package_id')),
        numaNodeId: node === undefined ? 0 : Number(node),
        ...(uncoreCacheId !== undefined ? { uncoreCacheId } : {}),
      });
    } catch {
      // an offlined or unreadable CPU is not the manager's to hand out
    }
  }
  return out;
}

/** The `id` of the level-3 cache among a CPU's caches (`cache/index<N>/level` = 3), as cAdvisor reads it. */
function levelThreeCacheId(cacheDir: string): number | undefined {
  let indexes: string[] = [];
  try {
    indexes = readdirSync(cacheDir).filter((n) => /^index\d+$/.test(n));
  } catch {
    return undefined;
  }
  for (const index of indexes) {
    try {
      if (readFileSync(join(cacheDir, index, 'level'), 'utf8').trim() !== '3') continue;
      const id = Number(readFileSync(join(cacheDir, index, 'id'), 'utf8').trim());
      if (Number.isInteger(id)) return id;
    } catch {
      // a cache without an id: none known
    }
  }
  return undefined;
}
