/**
 * The cgroup files that carry CPU shares, a CFS quota, a memory limit, a pids limit and huge page limits under
 * cgroup v1 and v2, in the order they must be written (pure): the kubelet's pod and QoS cgroups
 * (agent/cgroups) and the process runtime's container cgroups write them the same way.
 */

/** What a cgroup is set to (absent: left as the kernel made it). */
export interface ResourceConfig {
  cpuShares?: number;
  /** CFS quota in µs per period; -1: none. */
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimit?: number;
  pidsLimit?: number;
  /** Huge page limits in bytes by page size as the kernel names it (`2MB`, `1GB`). */
  hugePageLimits?: Readonly<Record<string, number>>;
  /** cgroup v2 files by name (CRI's `unified`: `memory.oom.group`, `memory.swap.max`, …); ignored on v1. */
  unified?: Readonly<Record<string, string>>;
}

/** A cgroup v2 interface file's name (`memory.oom.group`): never a path, so a `unified` key cannot leave the cgroup. */
const UNIFIED_FILE = /^[a-z][a-z0-9_]*\.[a-z0-9_.]+$/;

/**
 * An integer's digits, exact beyond 2^53 too: `String(2 ** 62)` is "4611686018427388000", which is not the number (the
 * QoS tiers' unbounded huge page limit is 2^62).
 */
function integerText(n: number): string {
  return Number.isSafeInteger(n) ? String(n) : BigInt(n).toString();
}

/** Upstream CpuSharesToCpuWeight (cgroup v2). */
export function cpuSharesToWeight(shares: number): number {
  return Math.floor(1 + ((shares - 2) * 9999) / 262142);
}

/**
 * One write: `file` of the hierarchy of `controller` (v2: the unified one, controller "", or an optional controller's
 * name, written only where the machine has it).
 */
export interface CgroupWrite {
  controller: string;
  file: string;
  value: string;
}

/** The files that set `c`, in the order they must be written. */
export function cgroupWrites(c: ResourceConfig, version: 1 | 2): CgroupWrite[] {
  const out: CgroupWrite[] = [];
  if (version === 1) {
    if (c.cpuShares !== undefined) out.push({ controller: 'cpu', file: 'cpu.shares', value: String(c.cpuShares) });
    if (c.cpuPeriod !== undefined)
      out.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(c.cpuPeriod) });
    if (c.cpuQuota !== undefined) out.push({ controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(c.cpuQuota) });
    if (c.memoryLimit !== undefined)
      out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: String(c.memoryLimit) });
    if (c.pidsLimit !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: String(c.pidsLimit) });
    for (const [size, limit] of Object.entries(c.hugePageLimits ?? {}))
      out.push({ controller: 'hugetlb', file: `hugetlb.${size}.limit_in_bytes`, value: integerText(limit) });
    return out;
  }
  if (c.cpuShares !== undefined)
    out.push({ controller: '', file: 'cpu.weight', value: String(cpuSharesToWeight(c.cpuShares)) });
  if (c.cpuQuota !== undefined || c.cpuPeriod !== undefined) {
    const quota = c.cpuQuota === undefined || c.cpuQuota < 0 ? 'max' : String(c.cpuQuota);
    out.push({ controller: '', file: 'cpu.max', value: `${quota} ${c.cpuPeriod ?? 100_000}` });
  }
  if (c.memoryLimit !== undefined) out.push({ controller: '', file: 'memory.max', value: String(c.memoryLimit) });
  if (c.pidsLimit !== undefined) out.push({ controller: '', file: 'pids.max', value: String(c.pidsLimit) });
  for (const [size, limit] of Object.entries(c.hugePageLimits ?? {}))
    out.push({ controller: 'hugetlb', file: `hugetlb.${size}.max`, value: integerText(limit) });
  for (const [file, value] of Object.entries(c.unified ?? {})) {
    if (!UNIFIED_FILE.test(file)) throw new Error(`invalid cgroup v2 file name ${JSON.stringify(file)}`);
    out.push({ controller: '', file, value });
  }
  return out;
}
