/**
 * Pod benchmarks against the real CLI (dist/) on the embedded process runtime:
 *  0. start-up: spawn to the first healthz 200, and RSS then;
 *  1. manifest-to-running latency: write one manifest, poll /pods every 10 ms until the pod is
 *     Running with every container running; 50 pods one after another (p50/p99), then a burst of
 *     50 written at once (time until all are Running);
 *  2. idle footprint: 100 static pods Running, kubelet RSS and CPU sampled over BENCH_IDLE_SECONDS
 *     (default 60);
 *  3. `/pods` throughput with 100 pods: read-only port (HTTP) and 10250 (TLS + client cert).
 * Prints a table and writes bench/results/pods.json. Not part of the tests.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../src/api/types.js';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet } from '../test/e2e/helpers.js';
import { load, machine, percentile, report, round, sampleProcess } from './lib.js';

const SEQUENTIAL = 50;
const BURST = 50;
const IDLE_PODS = 100;
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const node = 'bench-node';

const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
const ports = await freeKubeletPorts();

const manifest = (name: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: ["sleep", "3600"]}\n`;
const running = (p: Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state.running);
async function runningNames(): Promise<Set<string>> {
  const r = await httpGet(`http://127.0.0.1:${ports.ro}/pods`);
  return new Set((JSON.parse(r.body) as PodList).items.filter(running).map((p) => p.metadata.name!));
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const spawnedAt = performance.now();
const kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests, extra: ['--node-ip', '127.0.0.1'] }));
const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
try {
  // 0. start-up: spawn to the first 200 from /healthz (empty manifest dir, fresh root dir with PKI generation)
  for (;;) {
    if ((await httpGet(`http://127.0.0.1:${ports.hz}/healthz`).catch(() => ({ status: 0 }))).status === 200) break;
    if (performance.now() - spawnedAt > 30_000) throw new Error('no healthz after 30 s');
    await sleep(5);
  }
  results.startup = {
    toHealthzMs: round(performance.now() - spawnedAt),
    rssMiB: round(sampleProcess(kubelet.proc.pid!).rss / 2 ** 20),
  };
  // The API ports serve a moment after healthz: the pod latencies start once /pods answers.
  while ((await httpGet(`http://127.0.0.1:${ports.ro}/pods`).catch(() => ({ status: 0 }))).status !== 200)
    await sleep(5);

  // 1a. one pod at a time
  const latencies: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const name = `seq-${i}`;
    const t0 = performance.now();
    writeFileSync(join(manifests, `${name}.yaml`), manifest(name));
    for (;;) {
      if ((await runningNames()).has(`${name}-${node}`)) break;
      if (performance.now() - t0 > 30_000) throw new Error(`${name} not Running after 30 s`);
      await sleep(10);
    }
    latencies.push(performance.now() - t0);
  }
  results.manifestToRunning = {
    pods: SEQUENTIAL,
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    maxMs: round(Math.max(...latencies)),
  };

  // 1b. a burst written at once
  const t0 = performance.now();
  for (let i = 0; i < BURST; i++) writeFileSync(join(manifests, `burst-${i}.yaml`), manifest(`burst-${i}`));
  for (;;) {
    const names = await runningNames();
    if (Array.from({ length: BURST }, (_, i) => `burst-${i}-${node}`).every((n) => names.has(n))) break;
    if (performance.now() - t0 > 120_000) throw new Error('burst not Running after 120 s');
    await sleep(20);
  }
  results.burst = { pods: BURST, allRunningMs: round(performance.now() - t0) };

  // 2. idle footprint with 100 pods
  const total = SEQUENTIAL + BURST;
  if (total !== IDLE_PODS) throw new Error('pod counts out of step');
  await sleep(2000);
  const pid = kubelet.proc.pid!;
  const first = sampleProcess(pid);
  const rss: number[] = [first.rss];
  for (let s = 0; s < IDLE_SECONDS; s++) {
    await sleep(1000);
    rss.push(sampleProcess(pid).rss);
  }
  const last = sampleProcess(pid);
  const still = await runningNames();
  results.idle = {
    pods: still.size,
    seconds: IDLE_SECONDS,
    rssMiBStart: round(first.rss / 2 ** 20),
    rssMiBMax: round(Math.max(...rss) / 2 ** 20),
    rssMiBEnd: round(last.rss / 2 ** 20),
    cpuPercent: round(((last.cpuSeconds - first.cpuSeconds) / IDLE_SECONDS) * 100),
  };

  // 3. /pods throughput with 100 pods
  const tls = {
    ca: readFileSync(join(root, 'pki', 'ca.crt')),
    cert: readFileSync(join(root, 'pki', 'admin.crt')),
    key: readFileSync(join(root, 'pki', 'admin.key')),
  };
  results.podsReadOnly = await load({
    url: `http://127.0.0.1:${ports.ro}/pods`,
    connections: 16,
    seconds: LOAD_SECONDS,
  });
  results.podsSecure = await load({
    url: `https://127.0.0.1:${ports.port}/pods`,
    connections: 16,
    seconds: LOAD_SECONDS,
    tls,
  });
  const body = await httpGet(`http://127.0.0.1:${ports.ro}/pods`);
  results.podsResponseKiB = round(body.body.length / 1024);
} finally {
  await kubelet.stop();
  rmSync(dir, { recursive: true, force: true });
}

report('pods', results);
