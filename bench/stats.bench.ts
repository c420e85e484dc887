/**
 * Stats cost with 100 static pods on the embedded runtime: /stats/summary latency (p50/p99) and
 * requests/s over 16 keep-alive connections on the read-only port (the Go kubelet, measured with
 * 100 pods on containerd: p99 167 ms, 11 req/s), /metrics/resource the same way, and the kubelet's
 * idle CPU with the collector running. Writes bench/results/stats.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet } from '../test/e2e/helpers.js';
import { load, machine, report, round, sampleProcess } from './lib.js';

const PODS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-stats-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
for (let i = 0; i < PODS; i++)
  writeFileSync(
    join(manifests, `p${i}.yaml`),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: p${i}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: ["sleep", "3600"]}\n`,
  );
const ports = await freeKubeletPorts();
const k = startKubelet(kubeletArgs({ dir, ports, node: 'bench-stats', manifests, extra: ['--node-ip', '127.0.0.1'] }));
const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
try {
  for (;;) {
    const s = await httpGet(`http://127.0.0.1:${ports.ro}/stats/summary`)
      .then((r) => (r.status === 200 ? JSON.parse(r.body) : undefined))
      .catch(() => undefined);
    if (
      s?.pods?.length === PODS &&
      s.pods.every(
        (p: { containers?: { cpu?: { usageNanoCores?: number } }[] }) =>
          p.containers?.[0]?.cpu?.usageNanoCores !== undefined,
      )
    )
      break;
    await sleep(1000);
  }
  await sleep(5000);
  const a = sampleProcess(k.proc.pid!);
  await sleep(60_000);
  const b = sampleProcess(k.proc.pid!);
  results.idleWithCollector = {
    pods: PODS,
    cpuPercent: round(((b.cpuSeconds - a.cpuSeconds) / 60) * 100),
    rssMiB: round(b.rss / 2 ** 20),
  };
  const summary = await load({ url: `http://127.0.0.1:${ports.ro}/stats/summary`, connections: 16, seconds: 10 });
  results.statsSummary = {
    ...summary,
    goVsUs: {
      goP99Ms: 167,
      goPerSecond: 11,
      p99Ratio: round(summary.p99Ms / 167),
      perSecondRatio: round(summary.perSecond / 11),
    },
  };
  results.metricsResource = await load({
    url: `http://127.0.0.1:${ports.ro}/metrics/resource`,
    connections: 16,
    seconds: 10,
  });
} finally {
  await k.stop();
  rmSync(dir, { recursive: true, force: true });
}
report('stats', results);
