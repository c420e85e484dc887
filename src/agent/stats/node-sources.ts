/**
 * Node-level figures read from the kernel (the seams of the stats provider that cAdvisor's
 * machine and root-container stats fill upstream): cumulative CPU time from /proc/stat, memory
 * and swap from /proc/meminfo (working set = usage − inactive file pages, as cAdvisor computes it for the
 * root cgroup), network interfaces from /proc/net/dev with the default route's interface from
 * /proc/net/route, filesystem usage by statfs, and the pid limits and process count.
 *
 * /proc is read synchronously: its files are made in memory when read, and each asynchronous
 * read (open, fstat, read, close on the thread pool, a promise each) cost several times the
 * read itself under V8's interpreter, every 10 s. statfs stays asynchronous: its paths may be
 * on any filesystem.
 */
import { readFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import type { FsUsage } from '../volume/types.js';

/** A /proc file's text; '' when it cannot be read. */
const procText = (path: string): string => {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
};

/** Cumulative CPU time of the whole node in ns (user + nice + system + irq + softirq + steal). */
export function nodeCpuNs(): number {
  const line = readFileSync('/proc/stat', 'latin1').split('\n')[0];
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return ((user + nice + system + irq + softirq + (steal || 0)) * 1e9) / 100;
}

/**
 * Memory of the node in bytes, and its swap (in use: SwapTotal − SwapFree; available: SwapFree;
 * both 0 without swap); RSS is its anonymous pages, page faults /proc/vmstat's since boot.
 */
export function nodeMemory(): {
  capacity: number;
  usage: number;
  workingSet: number;
  available: number;
  rss: number;
  pageFaults?: number;
  majorPageFaults?: number;
  swapUsage: number;
  swapAvailable: number;
} {
  const m = new Map<string, number>();
  for (const l of readFileSync('/proc/meminfo', 'latin1').split('\n')) {
    const x = /^([^:]+):\s+(\d+)/.exec(l);
    if (x) m.set(x[1], Number(x[2]) * 1024);
  }
  const capacity = m.get('MemTotal') ?? 0;
  const usage = capacity - (m.get('MemFree') ?? 0);
  const workingSet = Math.max(0, usage - (m.get('Inactive(file)') ?? 0));
  const swapFree = m.get('SwapFree') ?? 0;
  return {
    capacity,
    usage,
    workingSet,
    available: Math.max(0, capacity - workingSet),
    rss: m.get('AnonPages') ?? 0,
    ...vmstatFaults(procText('/proc/vmstat')),
    swapUsage: Math.max(0, (m.get('SwapTotal') ?? 0) - swapFree),
    swapAvailable: swapFree,
  };
}

/** The page faults since boot in /proc/vmstat's text (`pgfault`, `pgmajfault`). Pure. */
export function vmstatFaults(text: string): { pageFaults?: number; majorPageFaults?: number } {
  const value = (key: string) => {
    const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  return { pageFaults: value('pgfault'), majorPageFaults: value('pgmajfault') };
}

/** One network interface's counters. */
export interface InterfaceStats {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

/** An interface's counters as /proc/<pid>/net/dev has them (cAdvisor's network stats). */
export interface NetDevStats extends InterfaceStats {
  rxPackets: number;
  rxDropped: number;
  txPackets: number;
  txDropped: number;
}

/** Every interface but loopback in /proc/net/dev's text. Pure. */
export function parseNetDev(text: string): NetDevStats[] {
  const out: NetDevStats[] = [];
  for (const l of text.split('\n').slice(2)) {
    const [name, rest] = l.split(':');
    if (!rest || name.trim() === 'lo') continue;
    const f = rest.trim().split(/\s+/).map(Number);
    out.push({
      name: name.trim(),
      rxBytes: f[0],
      rxPackets: f[1],
      rxErrors: f[2],
      rxDropped: f[3],
      txBytes: f[8],
      txPackets: f[9],
      txErrors: f[10],
      txDropped: f[11],
    });
  }
  return out;
}

/** The interfaces of the network namespace `pid` is in (none when it is gone). */
export const processNetDev = (pid: number): NetDevStats[] => parseNetDev(procText(`/proc/${pid}/net/dev`));

/** Every interface but loopback, and the name of the default route's interface. */
export function nodeNetwork(): { interfaces: NetDevStats[]; defaultName?: string } {
  const interfaces = parseNetDev(procText('/proc/net/dev'));
  let defaultName: string | undefined;
  for (const l of procText('/proc/net/route').split('\n').slice(1)) {
    const f = l.split('\t');
    if (f[1] === '00000000') {
      defaultName = f[0];
      break;
    }
  }
  return { interfaces, defaultName: defaultName ?? interfaces[0]?.name };
}

/** statfs of `path` as FsStats numbers. */
export async function fsUsage(path: string): Promise<FsUsage | undefined> {
  try {
    const s = await statfs(path);
    return {
      capacityBytes: s.blocks * s.bsize,
      availableBytes: s.bavail * s.bsize,
      usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodes: s.files,
      inodesFree: s.ffree,
      inodesUsed: s.files - s.ffree,
    };
  } catch {
    return undefined;
  }
}

/**
 * The task limit and the tasks running (upstream pidlimit.Stats): the smaller of kernel.pid_max
 * and kernel.threads-max (both bound the tasks, threads included), and the task count of
 * /proc/loadavg (sysinfo(2)'s would be truncated past 65535), threads included as the limit
 * counts them. One small read each, not a listing of /proc.
 */
export function nodeRlimit(): { maxpid: number; curproc: number } {
  const limits = ['/proc/sys/kernel/pid_max', '/proc/sys/kernel/threads-max']
    .map((f) => parseInt(procText(f), 10))
    .filter((n) => n >= 0);
  return { maxpid: limits.length ? Math.min(...limits) : 0, curproc: loadavgTasks(procText('/proc/loadavg')) ?? 0 };
}

/** The tasks in /proc/loadavg (`1.36 3.49 4.53 2/3518 3715089`: the 4th field's total). */
export function loadavgTasks(text: string): number | undefined {
  const f = text.trim().split(/\s+/);
  const m = f.length >= 5 ? /^\d+\/(\d+)$/.exec(f[3]) : null;
  return m ? Number(m[1]) : undefined;
}
