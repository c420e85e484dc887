/**
 * The kubelet's own open-files limit (upstream `maxOpenFiles`, 1000000: rlimit.SetNumFiles sets
 * RLIMIT_NOFILE's soft and hard limits at start). Node has no setrlimit, so prlimit(1) sets them
 * on this process; a failure (raising the hard limit needs CAP_SYS_RESOURCE) is returned for the
 * caller to log, as upstream only logs it. Processes the kubelet starts inherit the limit.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** RLIMIT_NOFILE's soft and hard limits in /proc/<pid>/limits text (Infinity: unlimited). Pure. */
export function parseOpenFilesLimit(limits: string): { soft: number; hard: number } | undefined {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits);
  const n = (v: string) => (v === 'unlimited' ? Infinity : Number(v));
  return m ? { soft: n(m[1]), hard: n(m[2]) } : undefined;
}

/** Sets this process's open-files limits to `n`; undefined when done (or already so), else why not. */
export async function setOpenFilesLimit(n: number, pid = process.pid): Promise<string | undefined> {
  let current: { soft: number; hard: number } | undefined;
  try {
    current = parseOpenFilesLimit(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  } catch {
    current = undefined;
  }
  if (current?.soft === n && current.hard === n) return undefined;
  return new Promise((resolve) =>
    execFile('prlimit', ['--pid', String(pid), `--nofile=${n}:${n}`], { timeout: 5000 }, (err, _stdout, stderr) =>
      resolve(err ? stderr.trim() || err.message : undefined),
    ),
  );
}
