/**
 * Scaling against the physical limit: N standalone static pods (hostNetwork busybox `sleep`,
 * grace 2 s, upstream's minimum) on a private containerd, started and stopped through tskubelet, against the SAME CRI
 * calls made directly on the same containerd (ImageStatus, RunPodSandbox, CreateContainer,
 * StartContainer with the configs the kubelet generates; StopContainer with the grace period,
 * StopPodSandbox, RemovePodSandbox), all pods at once, for N = 10, 100, 250
 * (BENCH_SCALE_SIZES), BENCH_SCALE_ROUNDS rounds each (default 3), median and ratio.
 *
 *  - start: manifests written → every pod Running in /pods, polled every 50 ms (kubelet); first call → last
 *    StartContainer returned (direct);
 *  - stop: manifests removed → no sandbox of theirs left in containerd (kubelet); first call →
 *    last RemovePodSandbox returned (direct);
 *  - direct, gated: the same direct calls through the kubelet's lifecycle gate (a few calls in
 *    flight per core, runtime/lifecycle-gate.ts), the runtime's limit for the order the kubelet
 *    calls it in; `gatedStartRatio` is the kubelet's start against it;
 *  Rounds alternate (direct, direct gated, kubelet, …) and each timed start begins once no pod cgroup
 *  is left, a settle time has passed and the machine is idle; the ratio is the median of the
 *  rounds' paired ratios.
 *  - kubelet CPU: the kubelet's CPU seconds from the manifests written to all Running, per pod
 *    (median over rounds; it includes serving the bench's /pods polls every 50 ms) — a figure that
 *    moves less with the runtime's speed than the ratio does;
 *  - footprint: each round's kubelet's RSS with no pods, then with N pods running (after 5 s),
 *    bytes per pod = the difference / N (median over rounds); CPU while idle with N pods (BENCH_SCALE_IDLE_SECONDS),
 *    and RSS and bytes per pod at the end of that idle time (first round).
 * Prints a table and writes bench/results/scale.json. Not part of the tests.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../src/api/types.js';
import { createCriClient } from '../src/cri/client.js';
import { directStartPod } from './direct-cri.js';
import { gateLifecycleCalls } from '../src/agent/runtime/lifecycle-gate.js';
import type { CriRuntime } from '../src/cri/services.js';
import { MIN_GRACE_SECONDS } from '../src/agent/runtime/grace-period.js';
import { findPodCgroups, removeOrphanedPodCgroups } from '../src/agent/gc/pod-cgroups.js';
import { startContainerd, TEST_IMAGES } from '../test/fixtures/containerd.js';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from '../test/e2e/helpers.js';
import { clearLeftoverPodCgroups, machine, percentile, report, round, sampleProcess, untilIdle } from './lib.js';

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '10,100,250').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS ?? 3);
const IDLE_SECONDS = Number(process.env.BENCH_SCALE_IDLE_SECONDS ?? 20);
// A quiet pause before each timed start, after the last pod cgroup is gone (BENCH_SCALE_SETTLE_MS).
const SETTLE_MS = Number(process.env.BENCH_SCALE_SETTLE_MS ?? 3000);
// The kubelet never gives less than upstream's minimumGracePeriodInSeconds (2 s), so both sides stop with 2 s.
const GRACE_S = MIN_GRACE_SECONDS;
const node = 'scale-bench';
await clearLeftoverPodCgroups();
const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-scale-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ctrd = await startContainerd();
const cri = createCriClient(ctrd.endpoint);
const gatedCri = gateLifecycleCalls(cri);
const median = (xs: number[]) => percentile(xs, 50);

const podSpec = (name: string): Pod => ({
  metadata: { name, namespace: 'default' },
  spec: {
    hostNetwork: true,
    terminationGracePeriodSeconds: GRACE_S,
    containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
  },
});
const running = (p: Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state.running);

/**
 * Whether the `n` pods named `prefix…` are all Running in /pods. The list is parsed only once it
 * holds `n` Running phases: parsing every poll's list (180 KiB at 100 pods) cost the bench ~0.3 s
 * of CPU on the two cores the kubelet shares, which the direct side does not pay.
 */
async function allRunning(ports: KubeletPorts, prefix: string, n: number): Promise<boolean> {
  const body = (await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body;
  if ((body.match(/"phase":\s*"Running"/g)?.length ?? 0) < n) return false;
  return (
    (JSON.parse(body) as PodList).items.filter((p) => p.metadata.name!.startsWith(prefix) && running(p)).length === n
  );
}
async function sandboxesLeft(prefix: string): Promise<number> {
  return (await cri.runtime.listPodSandbox()).filter((s) => s.metadata.name.startsWith(prefix)).length;
}

async function directRound(
  n: number,
  r: number,
  client: CriRuntime,
  tag = 'direct',
): Promise<{ startS: number; stopS: number }> {
  const names = Array.from({ length: n }, (_, i) => `${tag}-${n}-${r}-${i}`);
  const t0 = performance.now();
  const pods = await Promise.all(
    names.map((name) => {
      const pod = podSpec(name);
      pod.metadata.uid = `${name}-${Date.now()}`;
      return directStartPod(client, pod, { dir, node });
    }),
  );
  const startS = (performance.now() - t0) / 1000;
  await sleep(2000);
  const t1 = performance.now();
  await Promise.all(
    pods.map(async (p) => {
      await cri.runtime.stopContainer(p.containerId, GRACE_S);
      await cri.runtime.stopPodSandbox(p.sandboxId);
      await cri.runtime.removePodSandbox(p.sandboxId);
    }),
  );
  const stopS = (performance.now() - t1) / 1000;
  const uids = new Set(pods.map((p) => p.uid));
  await removeOrphanedPodCgroups('/sys/fs/cgroup', (uid) => !uids.has(uid));
  return { startS, stopS };
}

async function kubeletStop(prefix: string, n: number): Promise<number> {
  const t1 = performance.now();
  for (let i = 0; i < n; i++) rmSync(join(manifests, `${prefix}${i}.json`));
  while ((await sandboxesLeft(prefix)) > 0) {
    if (performance.now() - t1 > 600_000) throw new Error('pods not removed after 10 min');
    await sleep(50);
  }
  return (performance.now() - t1) / 1000;
}

/**
 * Waits until no pod cgroup is left, SETTLE_MS, and then until the machine is idle (the kernel's
 * deferred work of the last teardown done): each timed start begins on a quiet machine.
 */
async function quiet(): Promise<void> {
  const t0 = performance.now();
  while (findPodCgroups('/sys/fs/cgroup').size > 0) {
    if (performance.now() - t0 > 120_000) throw new Error('pod cgroups still there after 2 min');
    await sleep(100);
  }
  await sleep(SETTLE_MS);
  await untilIdle();
}

const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
try {
  for (const n of SIZES) {
    const d = { start: [] as number[], stop: [] as number[] };
    const g = { start: [] as number[], stop: [] as number[] };
    const k = {
      start: [] as number[],
      stop: [] as number[],
      cpu: [] as number[],
      rss0: [] as number[],
      rssN: [] as number[],
    };
    let cpuPercent = NaN;
    let rssIdle = NaN;
    // Rounds alternate, direct then kubelet, so a drift of the runtime's speed falls on both sides
    // alike; the ratio is the median of each round's pair. The kubelet is stopped during the direct
    // rounds (a kubelet stops sandboxes it does not know, as upstream's) and started again, on the
    // same root dir, for its own.
    for (let r = 0; r < ROUNDS; r++) {
      await quiet();
      const dr = await directRound(n, r, cri);
      d.start.push(dr.startS);
      d.stop.push(dr.stopS);
      await quiet();
      const gr = await directRound(n, r, gatedCri, 'gated');
      g.start.push(gr.startS);
      g.stop.push(gr.stopS);
      const ports = await freeKubeletPorts();
      const kubelet: Kubelet = startKubelet(
        kubeletArgs({
          dir: join(dir, `k${n}`),
          ports,
          node,
          manifests,
          extra: ['--container-runtime-endpoint', ctrd.endpoint, '--max-pods', String(n + 10)],
        }),
      );
      try {
        await untilServing(ports, kubelet);
        await sleep(2000);
        await quiet();
        const rss0 = sampleProcess(kubelet.proc.pid!).rss;
        const prefix = `k-${n}-${r}-`;
        const cpu0 = sampleProcess(kubelet.proc.pid!).cpuSeconds;
        const t0 = performance.now();
        for (let i = 0; i < n; i++)
          writeFileSync(join(manifests, `${prefix}${i}.json`), JSON.stringify(podSpec(`${prefix}${i}`)));
        for (;;) {
          if (await allRunning(ports, prefix, n)) break;
          if (performance.now() - t0 > 600_000) throw new Error(`pods not running after 10 min`);
          await sleep(50);
        }
        k.start.push((performance.now() - t0) / 1000);
        k.cpu.push(sampleProcess(kubelet.proc.pid!).cpuSeconds - cpu0);
        await sleep(5000);
        const a = sampleProcess(kubelet.proc.pid!);
        k.rss0.push(rss0);
        k.rssN.push(a.rss);
        if (r === 0) {
          await sleep(IDLE_SECONDS * 1000);
          const b = sampleProcess(kubelet.proc.pid!);
          cpuPercent = ((b.cpuSeconds - a.cpuSeconds) / IDLE_SECONDS) * 100;
          rssIdle = b.rss;
        }
        k.stop.push(await kubeletStop(prefix, n));
        // The kubelet removes the pods' cgroups after their sandboxes: it runs until it has.
        await quiet();
      } finally {
        await kubelet.stop();
      }
    }
    const startRatios = k.start.map((x, i) => x / d.start[i]);
    const stopRatios = k.stop.map((x, i) => x / d.stop[i]);
    const gatedStartRatios = k.start.map((x, i) => x / g.start[i]);
    const row = {
      pods: n,
      rounds: ROUNDS,
      directStartS: round(median(d.start)),
      kubeletStartS: round(median(k.start)),
      startRatio: round(median(startRatios)),
      startRatios: startRatios.map(round),
      directStopS: round(median(d.stop)),
      kubeletStopS: round(median(k.stop)),
      stopRatio: round(median(stopRatios)),
      stopRatios: stopRatios.map(round),
      gatedDirectStartS: round(median(g.start)),
      gatedStartRatio: round(median(gatedStartRatios)),
      gatedStartRatios: gatedStartRatios.map(round),
      gatedDirectStopS: round(median(g.stop)),
      kubeletStartCpuMsPerPod: round((median(k.cpu) / n) * 1000),
      rssMiBNoPods: round(median(k.rss0) / 2 ** 20),
      rssMiB: round(median(k.rssN) / 2 ** 20),
      bytesPerPod: Math.round(median(k.rssN.map((x, i) => x - k.rss0[i])) / n),
      rssIdleMiB: round(rssIdle / 2 ** 20),
      bytesPerPodIdle: Math.round((rssIdle - k.rss0[0]) / n),
      idleCpuPercent: round(cpuPercent),
    };
    results[`pods${n}`] = row;
    console.log(JSON.stringify(row));
  }
} finally {
  cri.close?.();
  await ctrd.stop();
  rmSync(dir, { recursive: true, force: true });
}
report('scale', results);
