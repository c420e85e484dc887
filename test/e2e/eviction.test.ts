/**
 * The eviction manager on a kubelet joined to the fake apiserver, with a hard threshold every
 * machine meets (`memory.available<1000Ti`): the Node reports MemoryPressure, a running API pod is
 * evicted (phase Failed, reason Evicted, upstream's message, a DisruptionTarget condition, an
 * Evicted event) while the static pod — critical — keeps running, and a BestEffort pod bound
 * afterwards is rejected as upstream's admission does under memory pressure. And on a node under
 * no pressure, a pod writing past its emptyDir's sizeLimit is evicted at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
