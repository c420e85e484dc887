/** Facts about host processes read from /proc (Linux). */
import { readFileSync } from 'node:fs';

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
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}
