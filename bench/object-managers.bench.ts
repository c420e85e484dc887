/**
 * What each configMapAndSecretChangeDetectionStrategy costs with many objects: the real CLI joined to the fake
 * apiserver
 * (HTTPS) on the embedded runtime, PODS pods each naming a ConfigMap and a Secret of its own (volumes) plus the
 * namespace's `kube-root-ca.crt` (projected, as every pod's service-account volume). Per strategy, once every pod
 * runs and a settle time has passed: the kubelet's RSS, its TCP connections, its CPU and the apiserver requests over
 * WINDOW_MS, and how long an update to one ConfigMap takes to reach its pod's volume file. The fake apiserver sends
 * bookmarks once a minute per watch, as kube-apiserver does.
 * Prints a table and writes bench/results/object-managers.json. Not part of the tests.
 */
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster } from '../test/e2e/cluster-helpers.js';
import { unmountTestMounts } from '../test/e2e/helpers.js';
import { machine, report, round, sampleProcess } from './lib.js';

const PODS = Number(process.env.BENCH_OBJECT_PODS ?? 100);
const WINDOW_MS = Number(process.env.BENCH_OBJECT_WINDOW_MS ?? 60_000);
const SETTLE_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Obj = Record<string, any>;

/** The process's open TCP sockets (its fds that are sockets, matched in /proc/net/tcp{,6} as established). */
function tcpConnections(pid: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  let count = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6'])
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === '01' && inodes.has(fields[9]!)) count++;
    }
  return count;
}

async function waitFor(pred: () => boolean, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`${what} not reached in ${ms} ms`);
    await sleep(20);
  }
}

async function measure(strategy: string): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-objects-'));
  const node = 'bench-objects-node';
  const c = await startCluster({
    dir,
    node,
    config: ['maxPods: 250', `configMapAndSecretChangeDetectionStrategy: ${strategy}`],
    // A kube-apiserver's bookmark frequency: the fake's default (twice a second per watch) would dominate the CPU.
    bookmarkMs: 60_000,
  });
  try {
    await waitFor(() => !!c.api.store.get('nodes', '', node), 30_000, 'node registered');
    c.api.store.create('configmaps', {
      metadata: { name: 'kube-root-ca.crt', namespace: 'default' },
      data: { 'ca.crt': c.ca.cert },
    });
    for (let i = 0; i < PODS; i++) {
      c.api.store.create('configmaps', { metadata: { name: `cm-${i}`, namespace: 'default' }, data: { v: '0' } });
      c.api.store.create('secrets', {
        metadata: { name: `secret-${i}`, namespace: 'default' },
        data: { pw: Buffer.from(`pw-${i}`).toString('base64') },
      });
      c.api.store.create(
        'pods',
        boundPod(`p-${i}`, node, {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sleep', '3600'],
              volumeMounts: [
                { name: 'cfg', mountPath: '/etc/cfg' },
                { name: 'sec', mountPath: '/etc/sec' },
                { name: 'ca', mountPath: '/etc/ca' },
              ],
            },
          ],
          volumes: [
            { name: 'cfg', configMap: { name: `cm-${i}` } },
            { name: 'sec', secret: { secretName: `secret-${i}` } },
            { name: 'ca', projected: { sources: [{ configMap: { name: 'kube-root-ca.crt' } }] } },
          ],
        }),
      );
    }
    const running = () =>
      c.api.store.list('pods').filter((p: Obj) => p.status?.containerStatuses?.[0]?.state?.running).length;
    await waitFor(() => running() === PODS, 300_000, 'all pods Running');
    await sleep(SETTLE_MS);
    const pid = c.kubelet.proc.pid!;
    const before = sampleProcess(pid);
    const requestsBefore = c.api.requests.length;
    await sleep(WINDOW_MS);
    const after = sampleProcess(pid);
    const requests = c.api.requests.length - requestsBefore;
    const connections = tcpConnections(pid);
    // One ConfigMap changed: how long until its pod's file has the new value.
    const uid = c.api.store.get('pods', 'default', 'p-0')!.metadata.uid;
    const file = join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~configmap', 'cfg', 'v');
    const current = c.api.store.get('configmaps', 'default', 'cm-0')!;
    const t0 = performance.now();
    c.api.store.update('configmaps', { ...current, data: { v: '1' } });
    await waitFor(() => readFileSync(file, 'utf8') === '1', 180_000, 'update reached the volume');
    return {
      rssMiB: round(after.rss / 2 ** 20),
      tcpConnections: connections,
      cpuPercent: round(((after.cpuSeconds - before.cpuSeconds) / (WINDOW_MS / 1000)) * 100),
      apiRequestsPerMinute: round((requests / WINDOW_MS) * 60_000),
      updateToVolumeMs: round(performance.now() - t0),
    };
  } finally {
    await c.close();
    unmountTestMounts(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString(), pods: PODS };
for (const strategy of (process.env.BENCH_OBJECT_STRATEGIES ?? 'Watch,Cache,Get').split(','))
  results[strategy] = await measure(strategy);
report('object-managers', results);
