/**
 * Eviction (hard thresholds): parsing, signals, pressure with its transition period, ranking, messages, admission and
 * one pass of the manager.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import {
  observe,
  parseThresholds,
  thresholdValue,
  pressureConditions,
  thresholdsMet,
  type PressureCondition,
} from '../../../src/agent/eviction/signals.js';
import { evictionMessage, formatBinary, isCriticalPod, rankForEviction } from '../../../src/agent/eviction/rank.js';
import { EvictionManager } from '../../../src/agent/eviction/eviction-manager.js';
import { localStorageViolation } from '../../../src/agent/eviction/local-storage.js';
import type { StatsSnapshot } from '../../../src/agent/stats/samples.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { evictionThresholds } from '../../../src/config/eviction-thresholds.js';

const Mi = 2 ** 20;
const Gi = 2 ** 30;
const pod = (
  name: string,
  o: { memRequest?: string; priority?: number; besteffort?: boolean; static?: boolean } = {},
): Pod => ({
  metadata: {
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    annotations: o.static ? { 'kubernetes.io/config.source': 'file' } : {},
  },
  spec: {
    priority: o.priority,
    containers: [
      {
        name: 'main',
        image: 'busybox',
        resources: o.besteffort ? {} : { requests: { cpu: '10m', ...(o.memRequest ? { memory: o.memRequest } : {}) } },
      },
    ],
  },
});
/** A snapshot with `available` memory bytes and per-pod working sets. */
function snapshot(available: number, usage: Record<string, number>, atMs = 1000): StatsSnapshot {
  return {
    atMs,
    node: {
      cpuNs: 0,
      memory: { available, usage: 0, workingSet: 0 } as StatsSnapshot['node']['memory'],
      network: { interfaces: [] },
      fs: {
        capacityBytes: 100 * Gi,
        availableBytes: 50 * Gi,
        usedBytes: 50 * Gi,
        inodes: 1000,
        inodesFree: 500,
        inodesUsed: 500,
      },
      rlimit: { maxpid: 4000, curproc: 100 },
    },
    kubelet: { cpuNs: 0, rss: 0, usage: 0, workingSet: 0, pageFaults: 0, majorPageFaults: 0 },
    containers: Object.entries(usage).map(([name, ws]) => ({
      id: name,
      name: 'main',
      podUid: `uid-${name}`,
      podName: name,
      podNamespace: 'default',
      atMs,
      workingSet: ws,
    })),
    podFiles: new Map(),
    pods: new Map(),
  };
}

describe('thresholds and signals', () => {
  it('parses quantities and percentages; 0 disables; unknown signals and bad values are errors', () => {
    expect(
      parseThresholds({
        'memory.available': '100Mi',
        'nodefs.available': '10%',
        'nodefs.inodesFree': '0%',
        'pid.available': '0',
      }),
    ).toEqual([
      { signal: 'memory.available', quantity: 100 * Mi, raw: '100Mi' },
      // As upstream's ParsePercentage holds it: a float32.
      { signal: 'nodefs.available', fraction: 0.10000000149011612, raw: '10%' },
    ]);
    // Of 100 GiB, 10 % is upstream's truncated float32 product, 160 bytes more than a tenth.
    expect(thresholdValue(parseThresholds({ 'nodefs.available': '10%' })[0], 100 * 2 ** 30)).toBe(10737418400);
    expect(() => parseThresholds({ 'memory.free': '1Gi' })).toThrow(/unknown signal "memory.free"/);
    expect(() => parseThresholds({ 'memory.available': '120%' })).toThrow(/invalid percentage/);
    expect(() => parseThresholds({ 'memory.available': 'lots' })).toThrow(/invalid quantity/);
  });

  it('observes memory, filesystems and pids, and meets a threshold only below it', () => {
    const obs = observe(snapshot(200 * Mi, {}), 8 * Gi);
    expect(obs.get('memory.available')).toEqual({ available: 200 * Mi, capacity: 8 * Gi });
    expect(obs.get('nodefs.inodesFree')).toEqual({ available: 500, capacity: 1000 });
    expect(obs.get('pid.available')).toEqual({ available: 3900, capacity: 4000 });
    const ts = parseThresholds({ 'memory.available': '200Mi', 'nodefs.available': '60%', 'pid.available': '3901' });
    expect(thresholdsMet(ts, obs).map((t) => t.signal)).toEqual(['nodefs.available', 'pid.available']);
  });

  it('keeps a pressure condition for the transition period after its threshold was last met', () => {
    const last = new Map<PressureCondition, number>();
    const [mem] = parseThresholds({ 'memory.available': '1Gi' });
    expect([...pressureConditions([mem], last, 0, 300_000)]).toEqual(['MemoryPressure']);
    expect([...pressureConditions([], last, 299_999, 300_000)]).toEqual(['MemoryPressure']);
    expect([...pressureConditions([], last, 300_000, 300_000)]).toEqual([]);
  });
});

describe('ranking and messages', () => {
  it('puts pods using more than they request first, then lower priority, then the most used above the request', () => {
    const [t] = parseThresholds({ 'memory.available': '1Gi' });
    const within = { pod: pod('within', { memRequest: '100Mi' }), usage: 50 * Mi };
    const over = { pod: pod('over', { memRequest: '10Mi', priority: 10 }), usage: 20 * Mi };
    const overLow = { pod: pod('over-low', { memRequest: '10Mi', priority: 0 }), usage: 15 * Mi };
    const overMore = { pod: pod('over-more', { memRequest: '10Mi', priority: 0 }), usage: 90 * Mi };
    expect(rankForEviction([within, over, overLow, overMore], t).map((c) => c.pod.metadata.name)).toEqual([
      'over-more',
      'over-low',
      'over',
      'within',
    ]);
    const [pid] = parseThresholds({ 'pid.available': '100' });
    expect(
      rankForEviction(
        [
          { pod: pod('a', { priority: 5 }), usage: 900 },
          { pod: pod('b', { priority: 5 }), usage: 1000 },
        ],
        pid,
      ).map((c) => c.pod.metadata.name),
    ).toEqual(['b', 'a']);
  });

  it("words the status message as upstream's, with the containers using more than they request", () => {
    const [t] = parseThresholds({ 'memory.available': '100Mi' });
    const c = { pod: pod('p', { memRequest: '10Mi' }), usage: 30 * Mi, containers: [{ name: 'main', usage: 30 * Mi }] };
    expect(evictionMessage(t, { available: 50 * Mi, capacity: 8 * Gi }, c)).toEqual({
      message:
        'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container main was using 30Mi, request is 10Mi, has larger consumption of memory. ',
      annotations: { offending_containers: 'main', offending_containers_usage: '30Mi', starved_resource: 'memory' },
    });
    expect([formatBinary(1536), formatBinary(1000), formatBinary(3 * Gi), formatBinary(2048)]).toEqual([
      '1536',
      '1000',
      '3Gi',
      '2Ki',
    ]);
  });

  it("annotates the Evicted event as upstream: init containers count, a pod-level request adds the pod's use, no stats no annotations", () => {
    const [t] = parseThresholds({ 'memory.available': '100Mi' });
    const observed = { available: 50 * Mi, capacity: 8 * Gi };
    const base = pod('p', { memRequest: '10Mi' });
    const withSidecar: Pod = {
      ...base,
      spec: {
        ...base.spec,
        resources: { requests: { memory: '64Mi' } },
        initContainers: [{ name: 'proxy', image: 'envoy', restartPolicy: 'Always' }],
        ephemeralContainers: [{ name: 'debugger', image: 'busybox' }],
      } as Pod['spec'],
    };
    const c = {
      pod: withSidecar,
      usage: 90 * Mi,
      podMemory: 91 * Mi,
      containers: [
        { name: 'main', usage: 5 * Mi },
        { name: 'proxy', usage: 40 * Mi },
        { name: 'debugger', usage: 45 * Mi },
      ],
    };
    expect(evictionMessage(t, observed, c)).toEqual({
      message:
        'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ' +
        'Pod p was using 91Mi, request is 64Mi, has larger consumption of memory. ' +
        'Container proxy was using 40Mi, request is 0, has larger consumption of memory. ',
      annotations: {
        offending_pod: 'p',
        offending_pod_usage: '91Mi',
        offending_containers: 'proxy',
        offending_containers_usage: '40Mi',
        starved_resource: 'memory',
      },
    });
    expect(evictionMessage(t, observed, { pod: base }).annotations).toEqual({});
    const [inodes] = parseThresholds({ 'nodefs.inodesFree': '5%' });
    expect(evictionMessage(inodes, { available: 10, capacity: 1000 }, { pod: base, containers: [] })).toEqual({
      message: 'The node was low on resource: inodes. Threshold quantity: 50, available: 10. ',
      annotations: { offending_containers: '', offending_containers_usage: '', starved_resource: 'inodes' },
    });
  });

  it('never ranks critical pods: static, mirror, system-critical priority', () => {
    expect(isCriticalPod(pod('s'), true)).toBe(true);
    expect(
      isCriticalPod(
        { ...pod('m'), metadata: { ...pod('m').metadata, annotations: { 'kubernetes.io/config.mirror': 'x' } } },
        false,
      ),
    ).toBe(true);
    expect(isCriticalPod(pod('c', { priority: 2_000_000_000 }), false)).toBe(true);
    expect(isCriticalPod(pod('n', { priority: 1000 }), false)).toBe(false);
  });
});

describe('the manager', () => {
  const setup = (available: number) => {
    const evicted: { name: string; message: string; grace: number }[] = [];
    const signals: string[] = [];
    const ages: [string, number][] = [];
    const pods = [
      pod('static', { static: true }),
      pod('small', { memRequest: '100Mi' }),
      pod('hog', { memRequest: '10Mi' }),
    ];
    let snap = snapshot(available, { static: 500 * Mi, small: 50 * Mi, hog: 300 * Mi });
    const clock = new FakeClock(1000);
    const m = new EvictionManager({
      thresholds: parseThresholds({ 'memory.available': '100Mi' }),
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi,
      snapshot: () => snap,
      activePods: () => pods,
      isStatic: (p) => p.metadata.name === 'static',
      // An evicted pod is no longer active (its worker is terminating).
      evict: (p, message, grace) => {
        evicted.push({ name: p.metadata.name!, message, grace });
        pods.splice(pods.indexOf(p), 1);
      },
      metrics: {
        evicted: (signal) => signals.push(signal),
        statsAge: (signal, seconds) => ages.push([signal, seconds]),
      },
      clock,
      logger: silentLogger,
    });
    return { m, evicted, signals, ages, clock, setSnap: (s: StatsSnapshot) => (snap = s) };
  };

  it('evicts nothing and admits everything without pressure', async () => {
    const { m, evicted } = setup(1 * Gi);
    expect(await m.synchronize()).toBeUndefined();
    expect(evicted).toEqual([]);
    expect(m.admit(pod('be', { besteffort: true }))).toEqual({ admit: true });
  });

  it('under memory pressure evicts the non-critical pod most over its request, with a 1 s grace, and admits only non-BestEffort pods', async () => {
    const { m, evicted, signals, ages, clock } = setup(50 * Mi);
    clock.advance(2500);
    expect((await m.synchronize())?.metadata.name).toBe('hog');
    expect(signals).toEqual(['memory.available']);
    // The stats acted on were sampled 2.5 s before (kubelet_eviction_stats_age_seconds).
    expect(ages).toEqual([['memory.available', 2.5]]);
    expect(evicted).toEqual([
      {
        name: 'hog',
        grace: 1,
        message:
          'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container main was using 300Mi, request is 10Mi, has larger consumption of memory. ',
      },
    ]);
    expect([...m.conditions()]).toEqual(['MemoryPressure']);
    expect(m.admit(pod('be', { besteffort: true }))).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    expect(m.admit(pod('bu'))).toEqual({ admit: true });
    // A critical (here static) pod is admitted whatever its QoS.
    expect(m.admit(pod('static', { besteffort: true }))).toEqual({ admit: true });
  });

  it('evicts the next pod only on stats sampled after the last one had time to die', async () => {
    const { m, evicted, clock, setSnap } = setup(50 * Mi);
    await m.synchronize();
    clock.advance(10_000);
    // The same (stale) snapshot: still under pressure, no second eviction.
    expect(await m.synchronize()).toBeUndefined();
    expect([...m.conditions()]).toEqual(['MemoryPressure']);
    setSnap(snapshot(50 * Mi, { small: 50 * Mi }, clock.now()));
    expect((await m.synchronize())?.metadata.name).toBe('small');
    expect(evicted.map((e) => e.name)).toEqual(['hog', 'small']);
  });
});

describe('local storage limits', () => {
  const withSpec = (spec: Partial<Pod['spec']>): Pod => ({
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: { containers: [], ...spec },
  });
  const violation = (p: Pod, u: Parameters<typeof localStorageViolation>[1]) => localStorageViolation(p, u)?.message;
  const usage = (volumes: Record<string, number>, containers: Record<string, number>) => ({
    volumes: new Map(Object.entries(volumes)),
    containers: new Map(Object.entries(containers)),
  });

  it('names an emptyDir over its sizeLimit first (a memory-backed one is the kernel’s to limit)', () => {
    const p = withSpec({
      volumes: [
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
        { name: 'disk', emptyDir: { sizeLimit: '1Mi' } },
      ],
      containers: [{ name: 'main', image: 'x', resources: { limits: { 'ephemeral-storage': '10Mi' } } }],
    });
    expect(violation(p, usage({ mem: 20 * Mi, disk: 2 * Mi }, { main: 20 * Mi }))).toBe(
      'Usage of EmptyDir volume "disk" exceeds the limit "1Mi". ',
    );
    // The memory-backed volume counts toward neither its sizeLimit nor the pod's ephemeral storage.
    expect(violation(p, usage({ mem: 20 * Mi, disk: Mi }, { main: 0 }))).toBeUndefined();
  });

  it('then the pod total against the sum of its containers’ limits, then each container against its own', () => {
    const p = withSpec({
      volumes: [{ name: 'disk', emptyDir: {} }],
      containers: [
        { name: 'a', image: 'x', resources: { limits: { 'ephemeral-storage': '10Mi' } } },
        { name: 'b', image: 'x' },
      ],
    });
    expect(violation(p, usage({ disk: 8 * Mi }, { a: Mi, b: 2 * Mi }))).toBe(
      'Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ',
    );
    expect(violation(p, usage({ disk: 0 }, { a: 9 * Mi, b: 0 }))).toBeUndefined();
    // The pod's own files (pod-level logs, etc-hosts) count in its total, as in upstream's summary it is measured by.
    expect(violation(p, { ...usage({ disk: 0 }, { a: 9 * Mi, b: 0 }), podFiles: 2 * Mi })).toBe(
      'Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ',
    );
    const two = withSpec({
      containers: [
        { name: 'a', image: 'x', resources: { limits: { 'ephemeral-storage': '1Mi' } } },
        { name: 'b', image: 'x', resources: { limits: { 'ephemeral-storage': '100Mi' } } },
      ],
    });
    expect(violation(two, usage({}, { a: 2 * Mi, b: 0 }))).toBe(
      'Container a exceeded its local ephemeral storage limit "1Mi". ',
    );
    // The signals upstream counts them under (kubelet_evictions).
    expect(localStorageViolation(two, usage({}, { a: 2 * Mi, b: 0 }))?.signal).toBe('ephemeralcontainerfs.limit');
    expect(localStorageViolation(p, usage({ disk: 8 * Mi }, { a: Mi, b: 2 * Mi }))?.signal).toBe(
      'ephemeralpodfs.limit',
    );
  });

  it("adds up the pod's limit as upstream's PodLimits (sidecars with the containers, an init container if more) and spells quantities as Go does", () => {
    const sidecarPod = withSpec({
      initContainers: [
        { name: 'init', image: 'x', resources: { limits: { 'ephemeral-storage': '1Mi' } } },
        { name: 'side', image: 'x', restartPolicy: 'Always', resources: { limits: { 'ephemeral-storage': '512Ki' } } },
      ],
      containers: [{ name: 'main', image: 'x', resources: { limits: { 'ephemeral-storage': '1024Ki' } } }],
    });
    // main 1 MiB + the sidecar's 512 KiB, in main's (first) format: "1536Ki".
    expect(violation(sidecarPod, usage({}, { main: 0, side: 0, init: 1600 * 1024 }))).toBe(
      'Pod ephemeral local storage usage exceeds the total limit of containers 1536Ki. ',
    );
    expect(violation(sidecarPod, usage({}, { main: 0, side: 0, init: 1500 * 1024 }))).toBeUndefined();
    // Only an init container has one: it is the pod's.
    const initOnly = withSpec({
      initContainers: [{ name: 'init', image: 'x', resources: { limits: { 'ephemeral-storage': '2M' } } }],
      containers: [{ name: 'main', image: 'x' }],
    });
    expect(violation(initOnly, usage({}, { main: 3_000_000 }))).toBe(
      'Pod ephemeral local storage usage exceeds the total limit of containers 2M. ',
    );
    // A sidecar over its own limit (kubernetes/kubernetes#138462), its limit spelled as Go's Quantity.String().
    const sidecarOver = withSpec({
      initContainers: [
        { name: 'side', image: 'x', restartPolicy: 'Always', resources: { limits: { 'ephemeral-storage': '1024Ki' } } },
      ],
      containers: [{ name: 'main', image: 'x', resources: { limits: { 'ephemeral-storage': '100Mi' } } }],
    });
    expect(violation(sidecarOver, usage({}, { side: 2 * Mi, main: 0 }))).toBe(
      'Container side exceeded its local ephemeral storage limit "1Mi". ',
    );
    const sized = withSpec({
      volumes: [{ name: 'disk', emptyDir: { sizeLimit: '2048Ki' } }],
      containers: [{ name: 'main', image: 'x' }],
    });
    expect(violation(sized, usage({ disk: 3 * Mi }, { main: 0 }))).toBe(
      'Usage of EmptyDir volume "disk" exceeds the limit "2Mi". ',
    );
  });
});

describe('localStorageCapacityIsolation', () => {
  it('false turns the local storage limits off', async () => {
    const base = pod('filler');
    const filler: Pod = {
      ...base,
      spec: { ...base.spec, volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }] },
    };
    const run = async (localStorageLimits: boolean) => {
      const evicted: string[] = [];
      const m = new EvictionManager({
        thresholds: [],
        transitionMs: 300_000,
        memoryCapacityBytes: 8 * Gi,
        snapshot: () => snapshot(4 * Gi, { filler: Mi }),
        activePods: () => [filler],
        isStatic: () => false,
        volumeUsage: () => [{ name: 'scratch', usedBytes: 3 * Mi }],
        localStorageLimits,
        evict: (p) => evicted.push(p.metadata.name!),
        clock: new FakeClock(1000),
        logger: silentLogger,
      });
      await m.synchronize();
      return evicted;
    };
    expect(await run(true)).toEqual(['filler']);
    expect(await run(false)).toEqual([]);
  });
});

describe('soft thresholds', () => {
  it('raise the condition at once but evict only once met for their grace period, with the pod grace capped by evictionMaxPodGracePeriod', async () => {
    const evicted: { name: string; grace: number }[] = [];
    const clock = new FakeClock(1000);
    const victim = {
      ...pod('hog', { memRequest: '10Mi' }),
      spec: { ...pod('hog', { memRequest: '10Mi' }).spec, terminationGracePeriodSeconds: 60 },
    };
    let snap = snapshot(500 * Mi, { hog: 300 * Mi }, 1000);
    const m = new EvictionManager({
      thresholds: [
        ...parseThresholds({ 'memory.available': '100Mi' }),
        ...parseThresholds({ 'memory.available': '1Gi' }).map((t) => ({ ...t, graceMs: 30_000 })),
      ],
      maxPodGraceSeconds: 20,
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi,
      snapshot: () => snap,
      activePods: () => [victim],
      isStatic: () => false,
      evict: (p, _message, grace) => evicted.push({ name: p.metadata.name!, grace }),
      clock,
      logger: silentLogger,
    });
    expect(await m.synchronize()).toBeUndefined();
    expect([...m.conditions()]).toEqual(['MemoryPressure']);
    clock.advance(20_000);
    snap = snapshot(500 * Mi, { hog: 300 * Mi }, clock.now());
    expect(await m.synchronize()).toBeUndefined();
    clock.advance(10_000);
    snap = snapshot(500 * Mi, { hog: 300 * Mi }, clock.now());
    expect((await m.synchronize())?.metadata.name).toBe('hog');
    expect(evicted).toEqual([{ name: 'hog', grace: 20 }]);
  });
});

describe('minimum reclaim', () => {
  it('keeps a met threshold met until its minimum reclaim is available too', () => {
    const [t] = parseThresholds({ 'memory.available': '100Mi' });
    const withReclaim = { ...t, minReclaim: { quantity: 500 * Mi } };
    const obs = observe(snapshot(300 * Mi, {}), 8 * Gi);
    expect(thresholdsMet([withReclaim], obs)).toEqual([]);
    expect(thresholdsMet([withReclaim], obs, [withReclaim])).toEqual([withReclaim]);
    expect(thresholdsMet([withReclaim], observe(snapshot(700 * Mi, {}), 8 * Gi), [withReclaim])).toEqual([]);
  });
});

describe('allocatable memory (enforceNodeAllocatable: pods)', () => {
  it("copies each hard memory.available threshold to allocatableMemory.available, only with the pods' allocatable enforced", () => {
    const kc = {
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
      evictionSoft: { 'memory.available': '500Mi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
      evictionMaxPodGracePeriod: 0,
      evictionMinimumReclaim: { 'memory.available': '50Mi' },
    };
    const brief = (ts: ReturnType<typeof evictionThresholds>) =>
      ts.map((t) => `${t.signal}<${t.raw}${t.graceMs === undefined ? '' : ' soft'}+${t.minReclaim?.quantity ?? 0}`);
    expect(brief(evictionThresholds({ ...kc, enforceNodeAllocatable: ['pods'] }))).toEqual([
      'memory.available<100Mi+52428800',
      'nodefs.available<10%+0',
      'memory.available<500Mi soft+52428800',
      'allocatableMemory.available<100Mi+52428800',
    ]);
    expect(brief(evictionThresholds({ ...kc, enforceNodeAllocatable: ['system-reserved'] }))).not.toContain(
      'allocatableMemory.available<100Mi+52428800',
    );
  });

  it("evicts when the pods near their cgroup's limit though the node has memory to spare", async () => {
    const evicted: { name: string; message: string }[] = [];
    const signals: string[] = [];
    const pods = [pod('small', { memRequest: '100Mi' }), pod('hog', { memRequest: '10Mi' })];
    const snap: StatsSnapshot = {
      ...snapshot(4 * Gi, { small: 50 * Mi, hog: 1900 * Mi }, 5000),
      // The pods' cgroup, capped at Node Allocatable (2 GiB), has 50 MiB left.
      podsCgroup: {
        cpuNs: 0,
        rss: 0,
        usage: 0,
        workingSet: 1998 * Mi,
        pageFaults: 0,
        majorPageFaults: 0,
        limit: 2048 * Mi,
      },
    };
    expect(observe(snap, 8 * Gi).get('allocatableMemory.available')).toEqual({
      available: 50 * Mi,
      capacity: 2048 * Mi,
    });
    const m = new EvictionManager({
      thresholds: evictionThresholds({
        evictionHard: { 'memory.available': '100Mi' },
        evictionSoft: {},
        evictionSoftGracePeriod: {},
        evictionMaxPodGracePeriod: 0,
        evictionMinimumReclaim: {},
        enforceNodeAllocatable: ['pods'],
      }),
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi,
      snapshot: () => snap,
      activePods: () => pods,
      isStatic: () => false,
      evict: (p, message) => evicted.push({ name: p.metadata.name!, message }),
      metrics: { evicted: (signal) => signals.push(signal), statsAge: () => {} },
      clock: new FakeClock(5000),
      logger: silentLogger,
    });
    expect((await m.synchronize())?.metadata.name).toBe('hog');
    expect([...m.conditions()]).toEqual(['MemoryPressure']);
    expect(signals).toEqual(['allocatableMemory.available']);
    expect(evicted[0].message).toBe(
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ' +
        'Container main was using 1900Mi, request is 10Mi, has larger consumption of memory. ',
    );
  });
});

describe('disk pressure with the stats as the collector keeps them', () => {
  it('frees node-level resources, samples again and evicts when still short (regression: waited for a newer sample forever)', async () => {
    const Gi2 = 2 ** 30;
    const evicted: string[] = [];
    const reclaimed: string[] = [];
    const clock = new FakeClock(10_000);
    const lowDisk = (atMs: number): StatsSnapshot => {
      const s = snapshot(4 * Gi2, { writer: 10 * Mi }, atMs);
      return {
        ...s,
        node: { ...s.node, fs: { ...s.node.fs!, availableBytes: 5 * Gi2 } },
        containers: s.containers.map((c) => ({ ...c, rootfsUsed: 3 * Gi2, logsUsed: 0 })),
      };
    };
    // The collector's latest sample, replaced only when it samples (every 10 s, or when asked).
    let latest = lowDisk(clock.now());
    const m = new EvictionManager({
      thresholds: parseThresholds({ 'nodefs.available': '10%' }),
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi2,
      snapshot: () => latest,
      sample: async () => (latest = lowDisk(clock.now())),
      activePods: () => [pod('writer')],
      isStatic: () => false,
      reclaim: {
        containers: async () => reclaimed.push('containers'),
        images: async () => reclaimed.push('images'),
      },
      evict: (p) => evicted.push(p.metadata.name!),
      clock,
      logger: silentLogger,
    });
    for (let pass = 0; pass < 3 && !evicted.length; pass++) {
      clock.advance(10_000);
      latest = lowDisk(clock.now());
      await m.synchronize();
    }
    expect(reclaimed).toEqual(['containers', 'images']);
    expect(evicted).toEqual(['writer']);
  });

  it('evicts nothing when the reclaim freed enough, judged on a fresh sample', async () => {
    const evicted: string[] = [];
    const clock = new FakeClock(20_000);
    const disk = (availableGi: number): StatsSnapshot => {
      const s = snapshot(4 * Gi, { writer: 10 * Mi }, clock.now());
      return { ...s, node: { ...s.node, fs: { ...s.node.fs!, availableBytes: availableGi * Gi } } };
    };
    let latest = disk(5);
    const m = new EvictionManager({
      thresholds: parseThresholds({ 'nodefs.available': '10%' }),
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi,
      snapshot: () => latest,
      sample: async () => (latest = disk(50)),
      activePods: () => [pod('writer')],
      isStatic: () => false,
      reclaim: { containers: async () => {}, images: async () => {} },
      evict: (p) => evicted.push(p.metadata.name!),
      clock,
      logger: silentLogger,
    });
    expect(await m.synchronize()).toBeUndefined();
    expect(evicted).toEqual([]);
  });
});

describe('the Evicted event', () => {
  it("is annotated with the starved resource whatever it is (pids here), as upstream's", async () => {
    const events: { reason: string; annotations?: Record<string, string> }[] = [];
    const s = snapshot(4 * Gi, { forker: 10 * Mi }, 5000);
    const snap: StatsSnapshot = {
      ...s,
      node: { ...s.node, rlimit: { maxpid: 4000, curproc: 3990 } },
      pods: new Map([['uid-forker', { podUid: 'uid-forker', processCount: 3000 }]]),
    };
    const m = new EvictionManager({
      thresholds: parseThresholds({ 'pid.available': '100' }),
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi,
      snapshot: () => snap,
      activePods: () => [pod('forker')],
      isStatic: () => false,
      evict: () => {},
      events: { record: (_ref, _type, reason, _message, annotations) => events.push({ reason, annotations }) },
      clock: new FakeClock(5000),
      logger: silentLogger,
    });
    expect((await m.synchronize())?.metadata.name).toBe('forker');
    expect(events).toEqual([
      {
        reason: 'Evicted',
        annotations: { offending_containers: '', offending_containers_usage: '', starved_resource: 'pids' },
      },
    ]);
  });
});
