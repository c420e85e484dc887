/**
 * Reading a cgroup's usage as cAdvisor does, for cgroup v1 (cpuacct + memory hierarchies) and v2
 * (one unified hierarchy): cumulative CPU, memory usage, working set (usage − inactive file) and
 * RSS. Synchronous: cgroupfs files are small and never block, and a sync read costs a fraction
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
  try {
    if (d.version === 2) {
      const m = parseFlatKeyed(read(d.dir, 'memory.stat'));
      const usage = Number(read(d.dir, 'memory.current'));
      return {
        cpuNs: (parseFlatKeyed(read(d.dir, 'cpu.stat')).get('usage_usec') ?? 0) * 1000,
        memoryUsageBytes: usage,
        workingSetBytes: Math.max(0, usage - (m.get('inactive_file') ?? 0)),
        rssBytes: m.get('anon') ?? 0,
      };
    }
    const m = parseFlatKeyed(read(d.memoryDir, 'memory.stat'));
    const usage = Number(read(d.memoryDir, 'memory.usage_in_bytes'));
    return {
      cpuNs: Number(read(d.cpuDir, 'cpuacct.usage')),
      memoryUsageBytes: usage,
      workingSetBytes: Math.max(0, usage - (m.get('total_inactive_file') ?? 0)),
      rssBytes: m.get('total_rss') ?? 0,
    };
  } catch {
    return undefined;
  }
}
