/**
 * Start-up of the real CLI (dist/), standalone, embedded runtime, no pods: spawn → first
 * /healthz 200, and spawn → the API ports serving (10255 /pods 200 and 10250 accepting TLS),
 * on a fresh root dir (PKI generated) and on a warm one (everything reused); BENCH_STARTUP_ROUNDS
 * rounds each (default 7), median and max; RSS once serving.
 * Prints a table and writes bench/results/startup.json. Not part of the tests.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acceptsConnections, freeKubeletPorts, httpGet, kubeletArgs, startKubelet } from '../test/e2e/helpers.js';
import { machine, percentile, report, round, sampleProcess } from './lib.js';

const ROUNDS = Number(process.env.BENCH_STARTUP_ROUNDS ?? 7);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function once(dir: string): Promise<{ healthzMs: number; servingMs: number; rssMiB: number }> {
  const ports = await freeKubeletPorts();
  const t0 = performance.now();
  const k = startKubelet(kubeletArgs({ dir, ports, node: 'startup', manifests: join(dir, 'manifests') }));
  try {
    let healthzMs = 0;
    for (;;) {
      const now = performance.now() - t0;
      if (
        !healthzMs &&
        (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`).catch(() => ({ status: 0 }))).status === 200
      )
        healthzMs = performance.now() - t0;
      if (
        healthzMs &&
        (await httpGet(`http://127.0.0.1:${ports.ro}/pods`).catch(() => ({ status: 0 }))).status === 200 &&
        (await acceptsConnections(ports.port))
      )
        return { healthzMs, servingMs: performance.now() - t0, rssMiB: sampleProcess(k.proc.pid!).rss / 2 ** 20 };
      if (now > 30_000) throw new Error(`not serving after 30 s; the kubelet said:\n${k.output().slice(-3000)}`);
      await sleep(2);
    }
  } finally {
    await k.stop();
  }
}

const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
const summarize = (xs: { healthzMs: number; servingMs: number; rssMiB: number }[]) => ({
  rounds: xs.length,
  toHealthzMsP50: round(
    percentile(
      xs.map((x) => x.healthzMs),
      50,
    ),
  ),
  toHealthzMsMax: round(Math.max(...xs.map((x) => x.healthzMs))),
  toServingMsP50: round(
    percentile(
      xs.map((x) => x.servingMs),
      50,
    ),
  ),
  toServingMsMax: round(Math.max(...xs.map((x) => x.servingMs))),
  rssMiB: round(
    percentile(
      xs.map((x) => x.rssMiB),
      50,
    ),
  ),
});
const fresh = [];
const warm = [];
const warmDir = mkdtempSync(join(tmpdir(), 'tsk-bench-startup-warm-'));
mkdirSync(join(warmDir, 'manifests'));
try {
  await once(warmDir); // creates the PKI and state the warm rounds reuse
  for (let r = 0; r < ROUNDS; r++) {
    const d = mkdtempSync(join(tmpdir(), 'tsk-bench-startup-fresh-'));
    mkdirSync(join(d, 'manifests'));
    try {
      fresh.push(await once(d));
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
    warm.push(await once(warmDir));
  }
} finally {
  rmSync(warmDir, { recursive: true, force: true });
}
results.fresh = summarize(fresh);
results.warm = summarize(warm);
report('startup', results);
