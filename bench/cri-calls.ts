/**
 * Reads a kubelet's log at `--v=10` (klog text or JSON lines) and prints where its CRI calls
 * spent time: per method the count and the p50 / p90 / max of their durations, and per pod the
 * waits between its calls — sandbox ready → CreateContainer sent, container created →
 * StartContainer sent — which is time the kubelet itself spent (syncs, files, cgroups), not the
 * runtime's. This is how the pod start's waits were found (docs/performance-history.md,
 * 28 November 2026): a bench round moves by ±10 % with containerd's speed, the waits do not.
 *
 *   tskubelet --v=10 … 2> kubelet.log;  node --import tsx bench/cri-calls.ts kubelet.log
 *
 * klog text times have the millisecond (pino's clock); the durations are the kubelet's own timing.
 */
import { readFileSync } from 'node:fs';
import { parseDuration } from '../src/lib/duration.js';
import { percentile } from './lib.js';

interface Call {
  method: string;
  response: boolean;
  at: number;
  fields: Record<string, string>;
}

/** One CRI call log line, or undefined for any other line. */
export function parseCallLine(line: string): Call | undefined {
  const head = /"\[Remote(?:Runtime|Image)Service\] (\w+)( Response)?"/.exec(line);
  if (!head) return undefined;
  let at: number;
  const fields: Record<string, string> = {};
  if (line.startsWith('{')) {
    const j = JSON.parse(line) as Record<string, unknown>;
    at = Number(j.time);
    for (const [k, v] of Object.entries(j)) fields[k] = String(v);
  } else {
    const t = /^[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+)/.exec(line);
    if (!t) return undefined;
    at = (Number(t[1]) * 60 + Number(t[2])) * 60_000 + Number(t[3]) * 1000;
    for (const m of line.slice(head.index + head[0].length).matchAll(/ (\w+)=("(?:[^"\\]|\\.)*"|\S+)/g))
      fields[m[1]] = m[2].replace(/^"|"$/g, '');
  }
  return { method: head[1], response: !!head[2], at, fields };
}

const stats = (xs: number[]) =>
  `n=${xs.length} p50 ${percentile(xs, 50).toFixed(1)} p90 ${percentile(xs, 90).toFixed(1)} max ${Math.max(...xs).toFixed(1)} ms`;

/** The report for a log's calls. */
export function report(calls: Call[]): string[] {
  const out: string[] = [];
  const byMethod = new Map<string, number[]>();
  for (const c of calls.filter((x) => x.response)) {
    const ms = parseDuration(c.fields.duration ?? '');
    if (ms === undefined) continue;
    const xs = byMethod.get(c.method);
    if (xs) xs.push(ms);
    else byMethod.set(c.method, [ms]);
  }
  out.push('durations:');
  for (const [m, xs] of [...byMethod].sort((a, b) => b[1].length - a[1].length))
    out.push(`  ${m.padEnd(24)} ${stats(xs)}`);
  // The kubelet's own time between one pod's calls.
  const sandboxReady = new Map<string, number>();
  const created = new Map<string, number>();
  const toCreate: number[] = [];
  const toStart: number[] = [];
  for (const c of calls) {
    if (c.method === 'RunPodSandbox' && c.response && c.fields.podSandboxID)
      sandboxReady.set(c.fields.podSandboxID, c.at);
    if (c.method === 'CreateContainer' && !c.response && sandboxReady.has(c.fields.podSandboxID)) {
      toCreate.push(c.at - sandboxReady.get(c.fields.podSandboxID)!);
      sandboxReady.delete(c.fields.podSandboxID);
    }
    if (c.method === 'CreateContainer' && c.response && c.fields.containerID) created.set(c.fields.containerID, c.at);
    if (c.method === 'StartContainer' && !c.response && created.has(c.fields.containerID)) {
      toStart.push(c.at - created.get(c.fields.containerID)!);
      created.delete(c.fields.containerID);
    }
  }
  if (toCreate.length) out.push(`sandbox ready → CreateContainer sent: ${stats(toCreate)}`);
  if (toStart.length) out.push(`container created → StartContainer sent: ${stats(toStart)}`);
  return out;
}

if (process.argv[1]?.endsWith('cri-calls.ts')) {
  const text = readFileSync(process.argv[2] ?? 0, 'utf8');
  const calls = text.split('\n').flatMap((l) => parseCallLine(l) ?? []);
  console.log(report(calls).join('\n'));
}
