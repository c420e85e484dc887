/** Shared pieces for benchmarks: percentiles, process sampling, a keep-alive load generator. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import { findPodCgroups, podCgroupPids, removeOrphanedPodCgroups } from '../src/agent/gc/pod-cgroups.js';
import { nodeCpuNs } from '../src/agent/stats/node-sources.js';

/** The p-th percentile (0–100) of `xs`, nearest-rank. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** RSS in bytes and CPU time in seconds (user + system) of process `pid`, from /proc. */
export function sampleProcess(pid: number): { rss: number; rssAnon: number; rssFile: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15 of stat)
  // RSS in its two parts: anonymous (heaps) and file-backed (the node binary's and libraries' pages touched).
  return { rss: kb('VmRSS'), rssAnon: kb('RssAnon'), rssFile: kb('RssFile'), cpuSeconds: ticks / 100 };
}

/** The machine the numbers come from. */
export function machine(): Record<string, string | number> {
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
  };
}

/** Options for {@link load}. */
export interface LoadOptions {
  url: string;
  connections: number;
  seconds: number;
  tls?: { ca: Buffer; cert: Buffer; key: Buffer };
}

/** Sends GETs over `connections` keep-alive connections for `seconds`; returns requests/s and latency percentiles. */
export async function load(
  o: LoadOptions,
): Promise<{ requests: number; perSecond: number; p50Ms: number; p99Ms: number; errors: number }> {
  const agent = o.tls
    ? new https.Agent({ keepAlive: true, maxSockets: o.connections, ...o.tls })
    : new http.Agent({ keepAlive: true, maxSockets: o.connections });
  const get = o.tls ? https.get : http.get;
  const lat: number[] = [];
  let errors = 0;
  const end = Date.now() + o.seconds * 1000;
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      get(o.url, { agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) lat.push(performance.now() - t0);
          else errors++;
          resolve();
        });
      }).on('error', () => {
        errors++;
        resolve();
      });
    });
  const worker = async () => {
    while (Date.now() < end) await one();
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: o.connections }, worker));
  const elapsed = (Date.now() - started) / 1000;
  agent.destroy();
  return {
    requests: lat.length,
    perSecond: Math.round(lat.length / elapsed),
    p50Ms: round(percentile(lat, 50)),
    p99Ms: round(percentile(lat, 99)),
    errors,
  };
}

/** Rounds to two decimals. */
export const round = (x: number) => Math.round(x * 100) / 100;

/** Prints `results` as a table and writes them to bench/results/<name>.json. */
export function report(name: string, results: Record<string, unknown>): void {
  console.table(
    Object.fromEntries(
      Object.entries(results)
        .filter(([k]) => k !== 'date')
        .map(([k, v]) => [k, v as object]),
    ),
  );
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  writeFileSync(join(import.meta.dirname, 'results', `${name}.json`), JSON.stringify(results, null, 2) + '\n');
}

/**
 * Before a bench on containerd: pod cgroups left by another kubelet or by a killed run (a test
 * that kills its kubelet leaves its pods' cgroups) slow every cgroup operation and skew the
 * figures. Empty ones are removed, as a kubelet's orphan cleanup would; a pod with processes
 * refuses the run.
 */
export async function clearLeftoverPodCgroups(): Promise<void> {
  const pods = findPodCgroups('/sys/fs/cgroup');
  let live = 0;
  for (const dirs of pods.values()) if ((await podCgroupPids(dirs)).size) live++;
  if (live)
    throw new Error(
      `${live} pods of another kubelet are running on this machine (pod cgroups with processes): stop them first`,
    );
  if (pods.size) console.error(`removing ${pods.size} empty pod cgroups left by an earlier run`);
  await removeOrphanedPodCgroups('/sys/fs/cgroup', () => false);
}

/**
 * Waits until the machine is idle: under `maxBusy` (a fraction of all cores) over a `windowMs`
 * window, for at most `timeoutMs` (then it goes on, saying so). The kernel's deferred work after a
 * teardown (cgroup release, RCU frees, writeback) can run for seconds after the last pod cgroup is
 * gone; a timed round that starts inside it is slowed by whatever it overlaps.
 */
export async function untilIdle(o: { maxBusy?: number; windowMs?: number; timeoutMs?: number } = {}): Promise<void> {
  const { maxBusy = 0.05, windowMs = 500, timeoutMs = 30_000 } = o;
  const t0 = performance.now();
  for (;;) {
    const b0 = nodeCpuNs();
    await new Promise((r) => setTimeout(r, windowMs));
    const busy = (nodeCpuNs() - b0) / 1e9 / ((windowMs / 1000) * os.cpus().length);
    if (busy < maxBusy) return;
    if (performance.now() - t0 > timeoutMs) {
      console.error(`machine still ${Math.round(busy * 100)} % busy after ${timeoutMs / 1000} s; going on`);
      return;
    }
  }
}
