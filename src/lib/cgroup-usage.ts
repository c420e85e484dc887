/**
 * Reading a cgroup's usage as cAdvisor does, for cgroup v1 (cpuacct + memory hierarchies) and v2
 * (one unified hierarchy): cumulative CPU, memory usage, working set (usage − inactive file),
 * RSS, page faults and the memory limit. Synchronous: cgroupfs files are small and never block, and a sync read costs a
 * fraction
 * of fs/promises' open/stat/read/close round trips (this runs for many cgroups every sample).
 */
import { readFileSync } from 'node:fs';
import { readCgroupIo, type CgroupIo, type DeviceNamer } from './cgroup-io.js';
import { cgroupPressure, type PressureByResource } from './pressure.js';

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
  swapBytes?: number;
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

/**
 * Where one cgroup's files are: v2 one directory; v1 the cpuacct and memory directories, and for
 * the details cAdvisor reads (readCgroupDetail) the cpu (CFS) and blkio ones when mounted.
 */
export type CgroupDirs =
  { version: 2; dir: string } | { version: 1; cpuDir: string; memoryDir: string; cfsDir?: string; blkioDir?: string };

/** Reads `key value` lines (memory.stat, cpu.stat) into a map. Pure. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.split(' ');
    if (k && v !== undefined) out.set(k, Number(v));
  }
  return out;
}

/** A cgroup file's text (`dir` a cgroup's directory, `file` a plain name: no path normalisation needed). */
const read = (dir: string, file: string) => readFileSync(`${dir}/${file}`, 'utf8');

/** `f()`, or undefined when it throws (a file this kernel or cgroup does not have). */
function optional<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/**
 * A cgroup's memory limit and swap (what readCgroupUsage and readCgroupDetail both report), given
 * its memory usage (v1's swap is memory+swap less it). No limit file (v2's root cgroup has none):
 * no limit; no swap file (no swap accounting): no swap figures.
 */
function memoryBounds(
  d: CgroupDirs,
  usage: number | undefined,
): { limitBytes?: number; swapBytes?: number; swapLimitBytes?: number } {
  const limit = (dir: string, file: string) => optional(() => memoryLimitOf(read(dir, file)));
  if (d.version === 2)
    return {
      limitBytes: limit(d.dir, 'memory.max'),
      swapBytes: optional(() => Number(read(d.dir, 'memory.swap.current'))),
      swapLimitBytes: limit(d.dir, 'memory.swap.max'),
    };
  const memsw = optional(() => Number(read(d.memoryDir, 'memory.memsw.usage_in_bytes')));
  const memLimit = limit(d.memoryDir, 'memory.limit_in_bytes');
  const memswLimit = limit(d.memoryDir, 'memory.memsw.limit_in_bytes');
  return {
    limitBytes: memLimit,
    swapBytes: memsw !== undefined && usage !== undefined ? Math.max(0, memsw - usage) : undefined,
    swapLimitBytes: memswLimit !== undefined && memLimit !== undefined ? Math.max(0, memswLimit - memLimit) : undefined,
  };
}

/**
 * The number after `key ` on its own line of a flat-keyed file (memory.stat, cpu.stat); undefined
 * when the key is absent. Pure. Looks up only what is asked (a memory.stat has 30-50 lines, and
 * this runs for every pod at every sample).
 */
export function flatKeyedValue(text: string, key: string): number | undefined {
  const at = text.startsWith(`${key} `) ? 0 : text.indexOf(`\n${key} `) + 1;
  if (at === 0 && !text.startsWith(`${key} `)) return undefined;
  const start = at + key.length + 1;
  const end = text.indexOf('\n', start);
  return Number(text.slice(start, end < 0 ? undefined : end));
}

/**
 * The usage of one cgroup; undefined when its files cannot be read. `bounds: false` leaves out
 * the memory limit and swap (three more files; a pod's come from its spec and its containers).
 */
export function readCgroupUsage(d: CgroupDirs, { bounds = true }: { bounds?: boolean } = {}): CgroupUsage | undefined {
  try {
    if (d.version === 2) {
      const m = read(d.dir, 'memory.stat');
      const usage = Number(read(d.dir, 'memory.current'));
      return {
        cpuNs: (flatKeyedValue(read(d.dir, 'cpu.stat'), 'usage_usec') ?? 0) * 1000,
        memoryUsageBytes: usage,
        workingSetBytes: Math.max(0, usage - (flatKeyedValue(m, 'inactive_file') ?? 0)),
        rssBytes: flatKeyedValue(m, 'anon') ?? 0,
        pageFaults: flatKeyedValue(m, 'pgfault') ?? 0,
        majorPageFaults: flatKeyedValue(m, 'pgmajfault') ?? 0,
        ...(bounds ? memoryBounds(d, usage) : {}),
      };
    }
    const m = read(d.memoryDir, 'memory.stat');
    const usage = Number(read(d.memoryDir, 'memory.usage_in_bytes'));
    return {
      cpuNs: Number(read(d.cpuDir, 'cpuacct.usage')),
      memoryUsageBytes: usage,
      workingSetBytes: Math.max(0, usage - (flatKeyedValue(m, 'total_inactive_file') ?? 0)),
      rssBytes: flatKeyedValue(m, 'total_rss') ?? 0,
      pageFaults: flatKeyedValue(m, 'total_pgfault') ?? 0,
      majorPageFaults: flatKeyedValue(m, 'total_pgmajfault') ?? 0,
      ...(bounds ? memoryBounds(d, usage) : {}),
    };
  } catch {
    return undefined;
  }
}

/** Clock ticks per second of cpuacct.stat (USER_HZ). */
const USER_HZ = 100;

/**
 * What cAdvisor reads of a container's cgroup beyond its usage, for /metrics/cadvisor's dashboard
 * series: page cache, mapped files, swap, the CPU split and CFS throttling, the limits, OOM kills
 * and processes. A figure the kernel does not give is undefined.
 */
export interface CgroupDetail {
  cacheBytes: number;
  mappedFileBytes: number;
  swapBytes?: number;
  maxUsageBytes?: number;
  /** Limits; undefined: unlimited. */
  limitBytes?: number;
  swapLimitBytes?: number;
  userNs?: number;
  systemNs?: number;
  cfsPeriods?: number;
  cfsThrottledPeriods?: number;
  cfsThrottledNs?: number;
  cpuShares?: number;
  /** CFS quota and period in µs; undefined: no quota. */
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  oomKills?: number;
  processes?: number;
  /** A process of the cgroup (the first of cgroup.procs): whose network namespace the pod's is. */
  firstPid?: number;
  /** Block I/O by device (cgroup-io.ts); undefined without I/O accounting. */
  io?: CgroupIo;
  /** Pressure stall information (cgroup v2 with PSI only). */
  pressure?: PressureByResource;
}

/**
 * The processes directly in one cgroup (cgroup.procs: v2's directory, v1's memory hierarchy) and
 * the first of them; both undefined when the file cannot be read (the cgroup is gone).
 */
export function readCgroupProcs(d: CgroupDirs): { processes?: number; firstPid?: number } {
  const pids = optional(() =>
    read(d.version === 2 ? d.dir : d.memoryDir, 'cgroup.procs')
      .split('\n')
      .filter(Boolean),
  );
  const first = pids?.length ? Number.parseInt(pids[0], 10) : NaN;
  return { processes: pids?.length, firstPid: Number.isSafeInteger(first) && first > 0 ? first : undefined };
}

const withPressure = (pressure: PressureByResource | undefined) => (pressure ? { pressure } : {});

/**
 * The details of one cgroup (devices named by `deviceName`); undefined when its memory files cannot be read (gone, or
 * not this runtime's layout).
 */
export function readCgroupDetail(d: CgroupDirs, deviceName?: DeviceNamer): CgroupDetail | undefined {
  const num = (dir: string | undefined, file: string) =>
    dir === undefined ? undefined : optional(() => Number(read(dir, file).trim()));
  let m: Map<string, number>;
  try {
    m = parseFlatKeyed(read(d.version === 2 ? d.dir : d.memoryDir, 'memory.stat'));
  } catch {
    return undefined;
  }
  if (d.version === 2) {
    const cpu = optional(() => parseFlatKeyed(read(d.dir, 'cpu.stat')));
    const max = optional(() => read(d.dir, 'cpu.max').trim().split(' '));
    const weight = num(d.dir, 'cpu.weight');
    const usec = (k: string) => (cpu?.get(k) === undefined ? undefined : cpu.get(k)! * 1000);
    return {
      cacheBytes: m.get('file') ?? 0,
      mappedFileBytes: m.get('file_mapped') ?? 0,
      ...memoryBounds(d, undefined),
      maxUsageBytes: num(d.dir, 'memory.peak'),
      userNs: usec('user_usec'),
      systemNs: usec('system_usec'),
      cfsPeriods: cpu?.get('nr_periods'),
      cfsThrottledPeriods: cpu?.get('nr_throttled'),
      cfsThrottledNs: usec('throttled_usec'),
      // cAdvisor's weight → shares (convertCPUWeightToCPULimit).
      cpuShares: weight === undefined ? undefined : 2 + Math.floor(((weight - 1) * 262142) / 9999),
      cpuQuotaUs: max && max[0] !== 'max' ? Number(max[0]) : undefined,
      cpuPeriodUs: max ? Number(max[1]) : undefined,
      oomKills: optional(() => parseFlatKeyed(read(d.dir, 'memory.events')).get('oom_kill')),
      ...readCgroupProcs(d),
      io: readCgroupIo(d, deviceName),
      ...withPressure(cgroupPressure(d.dir)),
    };
  }
  const usage = num(d.memoryDir, 'memory.usage_in_bytes');
  const acct = optional(() => parseFlatKeyed(read(d.cpuDir, 'cpuacct.stat')));
  const ticks = (k: string) => (acct?.get(k) === undefined ? undefined : (acct.get(k)! * 1e9) / USER_HZ);
  const cfs = d.cfsDir === undefined ? undefined : optional(() => parseFlatKeyed(read(d.cfsDir!, 'cpu.stat')));
  const quota = num(d.cfsDir, 'cpu.cfs_quota_us');
  return {
    cacheBytes: m.get('total_cache') ?? 0,
    mappedFileBytes: m.get('total_mapped_file') ?? 0,
    ...memoryBounds(d, usage),
    maxUsageBytes: num(d.memoryDir, 'memory.max_usage_in_bytes'),
    userNs: ticks('user'),
    systemNs: ticks('system'),
    cfsPeriods: cfs?.get('nr_periods'),
    cfsThrottledPeriods: cfs?.get('nr_throttled'),
    cfsThrottledNs: cfs?.get('throttled_time'),
    cpuShares: num(d.cfsDir, 'cpu.shares'),
    cpuQuotaUs: quota !== undefined && quota > 0 ? quota : undefined,
    cpuPeriodUs: num(d.cfsDir, 'cpu.cfs_period_us'),
    oomKills: optional(() => parseFlatKeyed(read(d.memoryDir, 'memory.oom_control')).get('oom_kill')),
    ...readCgroupProcs(d),
    io: readCgroupIo(d, deviceName),
  };
}
