/**
 * Cluster-path benchmarks: the real CLI joined to the fake apiserver (HTTPS, watch) on the
 * embedded process runtime:
 *  1. bind-to-Running: a pod created in the apiserver (bound to the node) until the apiserver's
 *     status says Running with the container running — 30 pods one after another (p50/p99);
 *  2. a burst of 50 bound pods at once until all are Running in the apiserver;
 *  3. `kubectl delete`-style graceful deletion of those 50 until every object is gone;
 *  4. apiserver writes per pod (status PATCHes, events) and kubelet RSS with 50 pods;
 *  5. the volume overhead: bind-to-Running of a pod with a configMap, a secret and a projected
 *     service-account token volume vs the same pod without volumes, 20 interleaved rounds.
 * Prints a table and writes bench/results/cluster.json. Not part of the tests. TSK_BENCH_HTTP1=1 makes the apiserver
 * speak HTTP/1.1 only, to compare the kubelet's client on both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster } from '../test/e2e/cluster-helpers.js';
import { httpGet, unmountTestMounts } from '../test/e2e/helpers.js';
import { machine, percentile, report, round, sampleProcess } from './lib.js';

const SEQUENTIAL = 30;
const BURST = 50;
const node = 'bench-cluster-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-cluster-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const http1Only = process.env.TSK_BENCH_HTTP1 === '1';
const c = await startCluster({ dir, node, config: ['maxPods: 200'], http1Only });
const results: Record<string, unknown> = {
  machine: machine(),
  date: new Date().toISOString(),
  apiserverProtocol: http1Only ? 'HTTP/1.1' : 'HTTP/2',
};
type Obj = Record<string, any>;
const running = (name: string) => {
  const p = c.api.store.get('pods', 'default', name) as Obj | undefined;
  return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running;
};
async function waitFor(pred: () => boolean, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`${what} not reached in ${ms} ms`);
    await sleep(5);
  }
}
try {
  await waitFor(
    () =>
      !!c.api.store
        .get('nodes', '', node)
        ?.status?.conditions?.find((k: Obj) => k.type === 'Ready' && k.status === 'True'),
    30_000,
    'node Ready',
  );
  const lat: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = performance.now();
    c.api.store.create('pods', boundPod(`seq-${i}`, node, { terminationGracePeriodSeconds: 1 }));
    await waitFor(() => !!running(`seq-${i}`), 30_000, `seq-${i} Running`);
    lat.push(performance.now() - t0);
  }
  results.bindToRunning = {
    pods: SEQUENTIAL,
    p50Ms: round(percentile(lat, 50)),
    p99Ms: round(percentile(lat, 99)),
    maxMs: round(Math.max(...lat)),
  };
  for (let i = 0; i < SEQUENTIAL; i++) c.api.store.remove('pods', 'default', `seq-${i}`);
  await sleep(3000);

  const before = c.api.requests.length;
  const t1 = performance.now();
  for (let i = 0; i < BURST; i++)
    c.api.store.create('pods', boundPod(`burst-${i}`, node, { terminationGracePeriodSeconds: 1 }));
  await waitFor(
    () => Array.from({ length: BURST }, (_, i) => `burst-${i}`).every((n) => running(n)),
    120_000,
    'burst Running',
  );
  results.burst = { pods: BURST, allRunningMs: round(performance.now() - t1) };
  await sleep(2000);
  const memory = sampleProcess(c.kubelet.proc.pid!);
  results.rssWith50PodsMiB = round(memory.rss / 2 ** 20);
  // Where it is: the heap (and its high-water mark, heapTotal), Node's external memory, the rest native.
  const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
  const gauge = (name: string) => round(Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]) / 2 ** 20);
  results.memoryWith50PodsMiB = {
    rssAnon: round(memory.rssAnon / 2 ** 20),
    rssFile: round(memory.rssFile / 2 ** 20),
    heapTotal: gauge('nodejs_heap_size_total_bytes'),
    heapUsed: gauge('nodejs_heap_size_used_bytes'),
    external: gauge('nodejs_external_memory_bytes'),
  };
  const writes = c.api.requests.slice(before);
  results.apiWritesPerPodToRunning = {
    statusPatches: round(
      writes.filter((r) => r.method === 'PATCH' && r.path.endsWith('/status') && r.path.includes('/pods/')).length /
        BURST,
    ),
    events: round(writes.filter((r) => r.path.endsWith('/events') || r.path.includes('/events/')).length / BURST),
  };

  const t2 = performance.now();
  for (let i = 0; i < BURST; i++) {
    const p = c.api.store.get('pods', 'default', `burst-${i}`)!;
    p.metadata.deletionTimestamp = new Date(Date.now() + 1000).toISOString();
    p.metadata.deletionGracePeriodSeconds = 1;
    c.api.store.update('pods', p);
  }
  await waitFor(() => c.api.store.list('pods').length === 0, 120_000, 'all deleted');
  results.gracefulDelete50 = { allGoneMs: round(performance.now() - t2) };

  c.api.store.create('configmaps', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'bench-cm', namespace: 'default' },
    data: { 'app.conf': 'x=1' },
  });
  c.api.store.create('secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'bench-secret', namespace: 'default' },
    data: { pw: Buffer.from('pw').toString('base64') },
  });
  c.api.store.create('configmaps', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kube-root-ca.crt', namespace: 'default' },
    data: { 'ca.crt': c.ca.cert },
  });
  const volumeSpec = {
    volumes: [
      { name: 'cfg', configMap: { name: 'bench-cm' } },
      { name: 'sec', secret: { secretName: 'bench-secret' } },
      {
        name: 'kube-api-access',
        projected: {
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ],
    containers: [
      {
        name: 'main',
        image: 'busybox',
        command: ['sleep', '3600'],
        volumeMounts: [
          { name: 'cfg', mountPath: '/etc/cfg' },
          { name: 'sec', mountPath: '/etc/sec' },
          { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
        ],
      },
    ],
  };
  const withVol: number[] = [];
  const without: number[] = [];
  for (let i = 0; i < 20; i++) {
    for (const [name, spec, into] of [
      [`vol-${i}`, volumeSpec, withVol],
      [`novol-${i}`, {}, without],
    ] as const) {
      const t = performance.now();
      c.api.store.create('pods', boundPod(name, node, { terminationGracePeriodSeconds: 1, ...spec }));
      await waitFor(() => !!running(name), 30_000, `${name} Running`);
      into.push(performance.now() - t);
    }
  }
  results.volumeOverhead = {
    rounds: 20,
    withVolumes: { p50Ms: round(percentile(withVol, 50)), p99Ms: round(percentile(withVol, 99)) },
    withoutVolumes: { p50Ms: round(percentile(without, 50)), p99Ms: round(percentile(without, 99)) },
    overheadP50Ms: round(percentile(withVol, 50) - percentile(without, 50)),
  };
  for (const p of c.api.store.list('pods')) c.api.store.remove('pods', 'default', p.metadata.name);
  await sleep(3000);
} finally {
  await c.close();
  unmountTestMounts(dir);
  rmSync(dir, { recursive: true, force: true });
}
report('cluster', results);
