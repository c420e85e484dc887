/**
 * CRI benchmarks against a real containerd (private instance, test/fixtures/containerd.ts):
 *  1. pod start latency: manifest written → pod Running in /pods (polled every 5 ms), against the
 *     SAME CRI calls made directly (ImageStatus, RunPodSandbox, PodSandboxStatus, CreateContainer,
 *     StartContainer with the configs the kubelet generates) — interleaved, p50/p99 and the ratio;
 *  2. churn: 50 pods written at once → all Running; all removed → none left in containerd (pods/s);
 *  3. kubelet RSS with 50 pods running.
 * Prints a table and writes bench/results/cri.json. Not part of the tests.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../src/api/types.js';
import { createCriClient } from '../src/cri/client.js';
import { directStartPod } from './direct-cri.js';
import { removeOrphanedPodCgroups } from '../src/agent/gc/pod-cgroups.js';
import { startContainerd, TEST_IMAGES } from '../test/fixtures/containerd.js';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, untilServing } from '../test/e2e/helpers.js';
import { clearLeftoverPodCgroups, machine, percentile, report, round, sampleProcess } from './lib.js';

await clearLeftoverPodCgroups();

const ROUNDS = Number(process.env.BENCH_CRI_ROUNDS ?? 20);
const CHURN = 50;
const node = 'cri-bench';
const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-cri-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ctrd = await startContainerd();
const cri = createCriClient(ctrd.endpoint);
const ports = await freeKubeletPorts();
const kubelet = startKubelet(
  kubeletArgs({
    dir,
    ports,
    node,
    manifests,
    extra: ['--container-runtime-endpoint', ctrd.endpoint, '--node-ip', '127.0.0.1'],
  }),
);
const podSpec = (name: string): Pod => ({
  metadata: { name, namespace: 'default' },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
  },
});
const running = (p: Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state.running);
async function podsNow(): Promise<Pod[]> {
  return (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[];
}
async function waitFor(pred: (pods: Pod[]) => boolean, pollMs: number, timeoutMs = 120_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!pred(await podsNow())) {
    if (performance.now() > end) throw new Error('timed out');
    await sleep(pollMs);
  }
}

/** The CRI calls of one pod start, made directly. */
async function directStart(i: number): Promise<{ ms: number; sandboxId: string; uid: string }> {
  const pod = podSpec(`direct-${i}`);
  pod.metadata.uid = `direct-uid-${i}-${Date.now()}`;
  return directStartPod(cri, pod, { dir, node });
}

const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
try {
  // Both API ports, not only /healthz: the read-only port opens after it (bench/startup.bench.ts).
  await untilServing(ports, kubelet);
  // 1. interleaved: one pod through the kubelet, one through direct CRI calls.
  const viaKubelet: number[] = [];
  const direct: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const name = `seq-${i}`;
    const t0 = performance.now();
    writeFileSync(join(manifests, `${name}.json`), JSON.stringify(podSpec(name)));
    await waitFor((ps) => ps.some((p) => p.metadata.name === `${name}-${node}` && running(p)), 5);
    viaKubelet.push(performance.now() - t0);
    const d = await directStart(i);
    direct.push(d.ms);
    await cri.runtime.stopPodSandbox(d.sandboxId);
    await cri.runtime.removePodSandbox(d.sandboxId);
    await removeOrphanedPodCgroups('/sys/fs/cgroup', (uid) => uid !== d.uid);
    rmSync(join(manifests, `${name}.json`));
    await waitFor((ps) => !ps.some((p) => p.metadata.name === `${name}-${node}`), 20);
  }
  const kP50 = percentile(viaKubelet, 50);
  const dP50 = percentile(direct, 50);
  results.podStart = {
    rounds: ROUNDS,
    kubeletP50Ms: round(kP50),
    kubeletP99Ms: round(percentile(viaKubelet, 99)),
    directCriP50Ms: round(dP50),
    directCriP99Ms: round(percentile(direct, 99)),
    overheadP50Ms: round(kP50 - dP50),
    ratioP50: round(kP50 / dP50),
  };
  // 2–3. churn and footprint.
  await sleep(2000);
  const t1 = performance.now();
  for (let i = 0; i < CHURN; i++)
    writeFileSync(join(manifests, `churn-${i}.json`), JSON.stringify(podSpec(`churn-${i}`)));
  await waitFor(
    (ps) => ps.filter((p) => p.metadata.name!.startsWith('churn-') && running(p)).length === CHURN,
    50,
    300_000,
  );
  const startS = (performance.now() - t1) / 1000;
  await sleep(5000);
  const rss = sampleProcess(kubelet.proc.pid!).rss;
  const t2 = performance.now();
  for (let i = 0; i < CHURN; i++) rmSync(join(manifests, `churn-${i}.json`));
  for (;;) {
    const left = (await cri.runtime.listPodSandbox()).filter((s) => s.metadata.name.startsWith('churn-')).length;
    if (left === 0) break;
    await sleep(50);
  }
  const stopS = (performance.now() - t2) / 1000;
  results.churn = {
    pods: CHURN,
    startAllS: round(startS),
    startPodsPerS: round(CHURN / startS),
    removeAllS: round(stopS),
    removePodsPerS: round(CHURN / stopS),
  };
  results.footprint = { pods: CHURN, kubeletRssMiB: round(rss / 2 ** 20) };
} finally {
  await kubelet.stop();
  cri.close?.();
  await ctrd.stop();
  rmSync(dir, { recursive: true, force: true });
}
report('cri', results);
