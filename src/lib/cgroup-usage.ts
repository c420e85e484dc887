/**
 * Reading a cgroup's usage as cAdvisor does, for cgroup v1 (cpuacct + memory hierarchies) and v2
 * (one unified hierarchy): cumulative CPU, memory usage, working set (usage − inactive file),
 * RSS, page faults and the memory limit. Synchronous: cgroupfs files are small and never block, and a sync read costs a fraction
 * of fs/promises' open/stat/read/close round trips (this runs for many cgroups every sample).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A cgroup's cumulative CPU and its memory. */
export interface CgroupUsage {
  cpuNs: number;
  memoryUsageBytes: number;
  workingSetBytes: number;
  rssBytes: number;
  /** Cumulative page faults, and the major ones (memory.stat pgfault / pgmajfault). */
  pageFaults: number;
  majorPageFaults: number;
  /** The memory limit; undefined when unlimited (cAdvisor's isMemoryUnlimited: above 2^62). */
  limitBytes?: number;
  /** Swap in use (v2 memory.swap.current; v1 memsw − memory usage); undefined without swap accounting. */
  swapUsageBytes?: number;
  /** The swap the cgroup may use (v2 memory.swap.max; v1 memsw − memory limit), when limited. */
  swapLimitBytes?: number;
}

/** Above this a memory limit is no limit (the kernel rounds "max" / -1 down to a page multiple near 2^63). */
const UNLIMITED_MEMORY = 2 ** 62;

/** A memory limit file's value; undefined for "max" and the like. Pure. */
export function memoryLimitOf(text: string): number | undefined {
  const n = Number(text.trim());
  return Number.isFinite(n) && n >= 0 && n < UNLIMITED_MEMORY ? n : undefined;
}

/** Where one cgroup's files are: v2 one directory; v1 the cpuacct and memory directories. */
export type CgroupDirs = { version: 2; dir: string } | { version: 1; cpuDir: string; memoryDir: string };

/** Reads `key value` lines (memory.stat, cpu.stat) into a map. Pure. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.split(' ');
    if (k && v !== undefined) out.set(k, Number(v));
  }
  return out;
}

/** The usage of one cgroup; undefined when its files cannot be read. */
export function readCgroupUsage(d: CgroupDirs): CgroupUsage | undefined {
  const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8');
  // No limit file (v2's root cgroup has none): no limit; no swap file (no swap accounting): no swap figures.
  const optional = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  const limit = (dir: string, file: string) => optional(() => memoryLimitOf(read(dir, file)));
  try {
    if (d.version === 2) {
      const m = parseFlatKeyed(read(d.dir, 'memory.stat'));
      const usage = Number(read(d.dir, 'memory.current'));
      return {
        cpuNs: (parseFlatKeyed(read(d.dir, 'cpu.stat')).get('usage_usec') ?? 0) * 1000,
        memoryUsageBytes: usage,
        workingSetBytes: Math.max(0, usage - (m.get('inactive_file') ?? 0)),
        rssBytes: m.get('anon') ?? 0,
        pageFaults: m.get('pgfault') ?? 0,
        majorPageFaults: m.get('pgmajfault') ?? 0,
        limitBytes: limit(d.dir, 'memory.max'),
        swapUsageBytes: optional(() => Number(read(d.dir, 'memory.swap.current'))),
        swapLimitBytes: limit(d.dir, 'memory.swap.max'),
      };
    }
    const m = parseFlatKeyed(read(d.memoryDir, 'memory.stat'));
    const usage = Number(read(d.memoryDir, 'memory.usage_in_bytes'));
    const memsw = optional(() => Number(read(d.memoryDir, 'memory.memsw.usage_in_bytes')));
    const memLimit = limit(d.memoryDir, 'memory.limit_in_bytes');
    const memswLimit = limit(d.memoryDir, 'memory.memsw.limit_in_bytes');
    return {
      cpuNs: Number(read(d.cpuDir, 'cpuacct.usage')),
      memoryUsageBytes: usage,
      workingSetBytes: Math.max(0, usage - (m.get('total_inactive_file') ?? 0)),
      rssBytes: m.get('total_rss') ?? 0,
      pageFaults: m.get('total_pgfault') ?? 0,
      majorPageFaults: m.get('total_pgmajfault') ?? 0,
      limitBytes: memLimit,
      swapUsageBytes: memsw === undefined ? undefined : Math.max(0, memsw - usage),
      swapLimitBytes: memswLimit !== undefined && memLimit !== undefined ? Math.max(0, memswLimit - memLimit) : undefined,
    };
  } catch {
    return undefined;
  }
}
