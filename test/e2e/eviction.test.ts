/**
 * The eviction manager on a kubelet joined to the fake apiserver, with a hard threshold every
 * machine meets (`memory.available<1000Ti`): the Node reports MemoryPressure, a running API pod is
 * evicted (phase Failed, reason Evicted, upstream's message, a DisruptionTarget condition, an
 * Evicted event) while the static pod — critical — keeps running, and a BestEffort pod bound
 * afterwards is rejected as upstream's admission does under memory pressure. A pod filling the node's disk past
 * `nodefs.available` is evicted after the node-level reclaim, judged on stats sampled after it. And on a node under
 * no pressure, a pod writing past its emptyDir's sizeLimit is evicted at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { httpGet, until } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-eviction-'));
const node = 'evict-node';
let c: Cluster;
const pod = (name: string) => c.api.store.get('pods', 'default', name);

beforeAll(async () => {
  c = await startCluster({
    dir,
    node,
    config: ['evictionHard: {memory.available: "1000Ti"}', 'evictionPressureTransitionPeriod: 30s'],
  });
  writeFileSync(
    join(c.manifests, 'static.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: critical, namespace: default}\nspec:\n  containers: [{name: main, image: busybox, command: [sleep, "3600"]}]\n',
  );
}, 30_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('eviction under memory pressure', () => {
  it('reports MemoryPressure, evicts a running pod with upstream status and event, spares the static pod, rejects a new BestEffort pod', async () => {
    await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
    // Burstable (a cpu request): admitted even once the node is under memory pressure.
    c.api.store.create(
      'pods',
      boundPod('victim', node, {
        containers: [
          { name: 'main', image: 'busybox', command: ['sleep', '3600'], resources: { requests: { cpu: '10m' } } },
        ],
      }),
    );
    const pressure = await until(
      () =>
        c.api.store
          .get('nodes', '', node)
          ?.status?.conditions?.find(
            (x: { type: string; status: string }) => x.type === 'MemoryPressure' && x.status === 'True',
          ),
      40_000,
      'MemoryPressure',
    );
    expect(pressure).toMatchObject({
      reason: 'KubeletHasInsufficientMemory',
      message: 'kubelet has insufficient memory available',
    });
    await until(
      () =>
        c.api.store
          .list('events')
          .find((e) => e.reason === 'NodeHasInsufficientMemory' && e.involvedObject?.kind === 'Node'),
      20_000,
      'NodeHasInsufficientMemory event',
    );
    const evicted = await until(
      () => (pod('victim')?.status?.reason === 'Evicted' ? pod('victim') : undefined),
      40_000,
      'victim evicted',
    );
    expect(evicted.status.phase).toBe('Failed');
    expect(evicted.status.message).toMatch(
      /^The node was low on resource: memory\. Threshold quantity: 1000Ti, available: \d+(Ki|Mi|Gi)?\. /,
    );
    expect(evicted.status.conditions).toContainEqual(
      expect.objectContaining({ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' }),
    );
    await until(
      () =>
        c.api.store
          .list('events')
          .some((e) => e.reason === 'Evicted' && e.involvedObject?.name === 'victim' && e.type === 'Warning'),
      20_000,
      'Evicted event',
    );
    // The static pod is critical: never a candidate.
    const mirror = c.api.store.get('pods', 'default', `critical-${node}`);
    expect(mirror?.status?.phase).toBe('Running');
    c.api.store.create('pods', boundPod('besteffort', node));
    const rejected = await until(
      () => (pod('besteffort')?.status?.phase === 'Failed' ? pod('besteffort') : undefined),
      20_000,
      'besteffort rejected',
    );
    expect(rejected.status).toMatchObject({
      reason: 'Evicted',
      message: 'Pod was rejected: The node had condition: [MemoryPressure]. ',
    });
    // Upstream's eviction metrics: the eviction by signal, and how old the stats it acted on were.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toMatch(/^kubelet_evictions\{eviction_signal="memory\.available"\} [1-9]\d*$/m);
    expect(metrics).toMatch(
      /^kubelet_eviction_stats_age_seconds_count\{eviction_signal="memory\.available"\} [1-9]\d*$/m,
    );
  }, 90_000);
});

describe('local storage limits', () => {
  it("evicts a pod whose emptyDir holds more than its sizeLimit, with upstream's message", async () => {
    const ldir = mkdtempSync(join(tmpdir(), 'tsk-eviction-ls-'));
    const l = await startCluster({ dir: ldir, node: 'ls-node', config: ['volumeStatsAggPeriod: 1s'] });
    try {
      await until(() => l.api.store.get('nodes', '', 'ls-node'), 20_000, 'node registered');
      const spec = {
        volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'head -c 3000000 /dev/zero > /scratch/fill; sleep 3600'],
            volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        ],
      };
      l.api.store.create('pods', boundPod('filler', 'ls-node', spec));
      const evicted = await until(
        () => {
          const p = l.api.store.get('pods', 'default', 'filler');
          return p?.status?.reason === 'Evicted' ? p : undefined;
        },
        60_000,
        'filler evicted',
      );
      expect(evicted.status).toMatchObject({
        phase: 'Failed',
        message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ',
      });
    } finally {
      await l.close();
      rmSync(ldir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('eviction under disk pressure', () => {
  it('frees what the node can, samples again and evicts the pod filling the disk (regression: never evicted)', async () => {
    const ddir = mkdtempSync(join(tmpdir(), 'tsk-eviction-disk-'));
    // As root the kubelet's root dir is a filesystem of its own (a 512 MiB tmpfs), so what the rest of the machine
    // writes or frees meanwhile (other tests) cannot move the figure; else the machine's disk, with a margin.
    const root = join(ddir, 'root');
    if (process.getuid?.() === 0) {
      mkdirSync(root);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512m', 'tmpfs', root]);
    }
    const { bavail, bsize } = statfsSync(process.getuid?.() === 0 ? root : ddir);
    // Met once the pod has written its 300 MiB, with 150 MiB of margin.
    const freeMi = Math.floor((bavail * bsize) / 2 ** 20) - 150;
    // Not a whole number of GiB: the message then says it in MiB.
    const thresholdMi = freeMi % 1024 === 0 ? freeMi - 1 : freeMi;
    const d = await startCluster({
      dir: ddir,
      node: 'disk-node',
      config: [
        `evictionHard: {nodefs.available: "${thresholdMi}Mi"}`,
        'volumeStatsAggPeriod: 1s',
        'evictionPressureTransitionPeriod: 10s',
      ],
    });
    try {
      await until(() => d.api.store.get('nodes', '', 'disk-node'), 20_000, 'node registered');
      d.api.store.create(
        'pods',
        boundPod('filler', 'disk-node', {
          volumes: [{ name: 'scratch', emptyDir: {} }],
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sh', '-c', 'head -c 314572800 /dev/zero > /scratch/fill; sleep 3600'],
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
        }),
      );
      const evicted = await until(
        () => {
          const p = d.api.store.get('pods', 'default', 'filler');
          return p?.status?.reason === 'Evicted' ? p : undefined;
        },
        60_000,
        'filler evicted',
      );
      expect(evicted.status.phase).toBe('Failed');
      expect(evicted.status.message).toMatch(
        new RegExp(
          `^The node was low on resource: ephemeral-storage\\. Threshold quantity: ${thresholdMi}Mi, available: \\d+(Ki|Mi|Gi)?\\. `,
        ),
      );
      const event = d.api.store
        .list('events')
        .find((e) => e.reason === 'Evicted' && e.involvedObject?.name === 'filler');
      expect(event?.metadata?.annotations?.starved_resource).toBe('ephemeral-storage');
      // The Node's event, as upstream's (kubectl describe node shows it).
      expect(
        d.api.store
          .list('events')
          .find((e) => e.reason === 'EvictionThresholdMet' && e.involvedObject?.kind === 'Node'),
      ).toMatchObject({ type: 'Warning', message: 'Attempting to reclaim ephemeral-storage' });
      const metrics = (await httpGet(`http://127.0.0.1:${d.ports.ro}/metrics`)).body;
      expect(metrics).toMatch(/^kubelet_evictions\{eviction_signal="nodefs\.available"\} 1$/m);
    } finally {
      await d.close();
      rmSync(ddir, { recursive: true, force: true });
    }
  }, 120_000);
});
