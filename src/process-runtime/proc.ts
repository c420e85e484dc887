/** Facts about host processes read from /proc (Linux). */
import { readdirSync, readFileSync } from 'node:fs';

/** The process start time (field 22 of /proc/<pid>/stat, in clock ticks), or undefined if gone. */
export function processStartTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const afterComm = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // afterComm[0] is field 3 (state); field 22 is index 19.
    if (afterComm[0] === 'Z') return undefined;
    return Number(afterComm[19]);
  } catch {
    return undefined;
  }
}

/** True when `pid` still runs and is the same process that started at `startTime`. */
export function isSameProcessAlive(pid: number, startTime: number | undefined): boolean {
  const st = processStartTime(pid);
  return st !== undefined && (startTime === undefined || st === startTime);
}

/** Sends `signal` to the process group `pgid`; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | number): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The environment variable that marks every process of a container (main, children, exec). */
export const CONTAINER_MARKER = 'TSKUBELET_PROCESS_RUNTIME_CONTAINER';

/**
 * Processes whose environment carries CONTAINER_MARKER with a value starting with `prefix`
 * (`<runtime key>:` for all of one runtime's, `<runtime key>:<container id>` for one container's).
 * Finds what a process group cannot: daemonized children (setsid) and processes started just
 * before a crash, whose records were never saved.
 */
export function markedProcesses(prefix: string): { pid: number; value: string }[] {
  const out: { pid: number; value: string }[] = [];
  const needle = `${CONTAINER_MARKER}=${prefix}`;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue;
    }
    const at = env.indexOf(needle);
    if (at < 0 || (at > 0 && env[at - 1] !== '\0')) continue;
    const end = env.indexOf('\0', at);
    out.push({ pid: Number(name), value: env.slice(at + CONTAINER_MARKER.length + 1, end < 0 ? undefined : end) });
  }
  return out;
}

/**
 * SIGKILLs every process marked with `prefix` (except those whose marker `spare` accepts); returns how many were
 * signalled.
 */
export function killMarked(prefix: string, spare: (value: string) => boolean = () => false): number {
  let n = 0;
  for (const p of markedProcesses(prefix)) {
    if (spare(p.value)) continue;
    try {
      process.kill(p.pid, 'SIGKILL');
      n++;
    } catch {
      /* gone */
    }
  }
  return n;
}

/** Clock ticks per second (USER_HZ; 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;
const PAGE_SIZE = 4096;

/**
 * CPU time (ns), resident memory (bytes) and page faults summed over `pids` (faults and CPU with
 * their reaped children's); gone processes count 0. CPU is
 * the nanosecond scheduler time of every thread (/proc/<pid>/task/<tid>/schedstat), so even a
 * process that ran for a few microseconds is not zero, plus the CPU of children the process has
 * reaped (cutime + cstime), which would otherwise vanish with them.
 */
export function processTreeUsage(pids: number[]): {
  cpuNs: number;
  rssBytes: number;
  pageFaults: number;
  majorPageFaults: number;
} {
  let cpuNs = 0;
  let pages = 0;
  let pageFaults = 0;
  let majorPageFaults = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // From the state field on: minflt cminflt majflt cmajflt are fields 10–13 of proc(5), utime… 14–17.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpuNs += ((Number(f[13]) + Number(f[14])) * 1e9) / TICKS_PER_SECOND;
      pageFaults += Number(f[7]) + Number(f[8]);
      majorPageFaults += Number(f[9]) + Number(f[10]);
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          cpuNs += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        } catch {
          /* thread gone */
        }
      }
      pages += Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    } catch {
      /* exited */
    }
  }
  return { cpuNs, rssBytes: pages * PAGE_SIZE, pageFaults, majorPageFaults };
}
