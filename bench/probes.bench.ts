/**
 * Probe cost: the kubelet's CPU with 100 static pods on the embedded runtime, each with an exec
 * readiness probe and an httpGet liveness probe at periodSeconds 10 (200 probes / 10 s), against
 * the same 100 pods without probes — on the embedded runtime, then on a private containerd
 * (hostNetwork pods), where an exec probe is a CRI ExecSync that containerd carries out, as for
 * the Go kubelet. The httpGet probes hit one HTTP server run by the bench on the host network.
 * Three rounds each, without and with probes alternating, medians. The yardstick from the issue:
 * within one core-percent per 100 probes / 10 s. Writes bench/results/probes.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet } from '../test/e2e/helpers.js';
import { clearLeftoverPodCgroups, machine, report, round, sampleProcess } from './lib.js';
import { startContainerd, TEST_IMAGES } from '../test/fixtures/containerd.js';
import { createCriClient } from '../src/cri/client.js';

await clearLeftoverPodCgroups();

const PODS = 100;
const MEASURE_S = 60;
const ROUNDS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const server = http.createServer((_req, res) => res.end('ok'));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;

async function run(
  withProbes: boolean,
  cri?: { endpoint: string; image: string },
): Promise<{ cpuPercent: number; rssMiB: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-probes-'));
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  const probes = withProbes
    ? `\n    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 10}\n    livenessProbe: {httpGet: {host: 127.0.0.1, port: ${port}, path: /}, periodSeconds: 10}`
    : '';
  for (let i = 0; i < PODS; i++)
    writeFileSync(
      join(manifests, `p${i}.yaml`),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: p${i}}\nspec:\n  terminationGracePeriodSeconds: 1\n  hostNetwork: true\n  containers:\n  - name: main\n    image: ${cri?.image ?? 'busybox'}\n    command: ["sleep", "3600"]${probes}\n`,
    );
  const ports = await freeKubeletPorts();
  const k = startKubelet(
    kubeletArgs({
      dir,
      ports,
      node: 'bench-probes',
      manifests,
      extra: ['--node-ip', '127.0.0.1', ...(cri ? ['--container-runtime-endpoint', cri.endpoint] : [])],
    }),
  );
  try {
    for (;;) {
      const items = await httpGet(`http://127.0.0.1:${ports.ro}/pods`)
        .then(
          (r) =>
            JSON.parse(r.body).items as {
              status?: { containerStatuses?: { ready: boolean; state: { running?: unknown } }[] };
            }[],
        )
        .catch(() => []);
      if (
        items.length === PODS &&
        items.every((p) =>
          withProbes ? p.status?.containerStatuses?.[0]?.ready : p.status?.containerStatuses?.[0]?.state?.running,
        )
      )
        break;
      await sleep(500);
    }
    await sleep(15_000);
    const a = sampleProcess(k.proc.pid!);
    await sleep(MEASURE_S * 1000);
    const b = sampleProcess(k.proc.pid!);
    return { cpuPercent: round(((b.cpuSeconds - a.cpuSeconds) / MEASURE_S) * 100), rssMiB: round(b.rss / 2 ** 20) };
  } finally {
    if (cri) {
      // Pods on containerd outlive the kubelet: remove them before the next run.
      rmSync(manifests, { recursive: true, force: true });
      mkdirSync(manifests);
      const client = createCriClient(cri.endpoint);
      for (let i = 0; i < 120 && (await client.runtime.listPodSandbox()).length > 0; i++) await sleep(1000);
      client.close?.();
    }
    await k.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const probesPer10s = 2 * PODS;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** Rounds alternate without/with probes, so a drift of the machine hits both sides; medians. */
async function compare(cri?: { endpoint: string; image: string }) {
  const a: { cpuPercent: number; rssMiB: number }[] = [];
  const b: { cpuPercent: number; rssMiB: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    a.push(await run(false, cri));
    b.push(await run(true, cri));
  }
  const without = {
    cpuPercent: median(a.map((x) => x.cpuPercent)),
    rssMiB: median(a.map((x) => x.rssMiB)),
    rounds: a.map((x) => x.cpuPercent),
  };
  const withProbes = {
    cpuPercent: median(b.map((x) => x.cpuPercent)),
    rssMiB: median(b.map((x) => x.rssMiB)),
    rounds: b.map((x) => x.cpuPercent),
  };
  const d = withProbes.cpuPercent - without.cpuPercent;
  return {
    without,
    withProbes,
    overhead: { cpuPercent: round(d), probesPer10s, corePercentPer100ProbesPer10s: round((d * 100) / probesPer10s) },
  };
}
const embedded = await compare();
const ctrd = await startContainerd({ cni: false });
let containerd: Awaited<ReturnType<typeof compare>> | undefined;
try {
  containerd = await compare({ endpoint: ctrd.endpoint, image: TEST_IMAGES.busybox });
} finally {
  await ctrd.stop();
}
server.close();
report('probes', {
  machine: machine(),
  date: new Date().toISOString(),
  rounds: ROUNDS,
  measureSeconds: MEASURE_S,
  withoutProbes: embedded.without,
  withProbes: embedded.withProbes,
  probeOverhead: embedded.overhead,
  containerdWithoutProbes: containerd?.without,
  containerdWithProbes: containerd?.withProbes,
  containerdProbeOverhead: containerd?.overhead,
});
