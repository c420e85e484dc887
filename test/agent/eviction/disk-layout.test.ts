/**
 * Eviction on the node's disk layout (KubeletSeparateDiskGC, upstream helpers.go): the containerfs thresholds, what
 * ranks the pods and what is reclaimed under each filesystem's pressure, on one filesystem, a dedicated image
 * filesystem and a split one; and the manager acting on them.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import {
  nodeReclaimFor,
  podDiskUseCounted,
  withContainerFsThresholds,
  type DiskLayout,
} from '../../../src/agent/eviction/disk-layout.js';
import { parseThresholds, type Threshold } from '../../../src/agent/eviction/signals.js';
import { EvictionManager } from '../../../src/agent/eviction/eviction-manager.js';
import type { StatsSnapshot } from '../../../src/agent/stats/samples.js';
import { evictionThresholds } from '../../../src/config/eviction-thresholds.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';

const Gi = 2 ** 30;
const ONE: DiskLayout = { dedicatedImageFs: false, splitContainerFs: false };
const DEDICATED: DiskLayout = { dedicatedImageFs: true, splitContainerFs: false };
const SPLIT: DiskLayout = { dedicatedImageFs: true, splitContainerFs: true };

const hard = (m: Record<string, string>) => parseThresholds(m);
const soft = (m: Record<string, string>, graceMs: number) =>
  parseThresholds(m, 'evictionSoft').map((t) => ({ ...t, graceMs }));
const brief = (ts: Threshold[]) => ts.map((t) => `${t.signal}<${t.raw}${t.graceMs === undefined ? '' : ' soft'}`);

describe('containerfs thresholds (upstream UpdateContainerFsThresholds)', () => {
  const configured = [
    ...hard({ 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' }),
    ...soft({ 'nodefs.available': '20%', 'imagefs.available': '25%' }, 60_000),
  ];

  it("follow nodefs' on one filesystem and on a split one, imagefs' with a dedicated image filesystem", () => {
    for (const layout of [ONE, SPLIT])
      expect(
        brief(withContainerFsThresholds(configured, layout).thresholds).filter((t) => t.startsWith('container')),
      ).toEqual(['containerfs.available<10%', 'containerfs.inodesFree<5%', 'containerfs.available<20% soft']);
    expect(
      brief(withContainerFsThresholds(configured, DEDICATED).thresholds).filter((t) => t.startsWith('container')),
    ).toEqual(['containerfs.available<15%', 'containerfs.available<25% soft']);
  });

  it('replace the containerfs thresholds of the configuration, which are named as ignored', () => {
    const given = [...configured, ...hard({ 'containerfs.available': '1Gi' })];
    const { thresholds, ignored } = withContainerFsThresholds(given, ONE);
    expect(brief(thresholds)).not.toContain('containerfs.available<1Gi');
    expect(brief(thresholds)).toContain('containerfs.available<10%');
    expect(ignored).toEqual(['found containerfs.available for hard eviction']);
    // The configured ones stay the same objects (the manager keys its state on them).
    expect(thresholds.filter((t) => configured.includes(t))).toHaveLength(configured.length);
  });

  it('are accepted in evictionHard and evictionSoft, as upstream', () => {
    expect(
      brief(
        evictionThresholds({
          evictionHard: { 'containerfs.available': '1Gi', 'containerfs.inodesFree': '5%' },
          evictionSoft: { 'containerfs.available': '2Gi' },
          evictionSoftGracePeriod: { 'containerfs.available': '1m' },
          evictionMaxPodGracePeriod: 0,
          evictionMinimumReclaim: {},
        }),
      ),
    ).toEqual(['containerfs.available<1Gi', 'containerfs.inodesFree<5%', 'containerfs.available<2Gi soft']);
  });
});

describe('what ranks the pods and what is reclaimed (upstream buildSignalToRankFunc, buildSignalToNodeReclaimFuncs)', () => {
  it('one filesystem: every disk signal counts all of a pod and frees containers and images', () => {
    for (const signal of ['nodefs.available', 'imagefs.inodesFree', 'containerfs.available'] as const) {
      expect(podDiskUseCounted(signal, ONE)).toEqual(['rootfs', 'logs', 'localVolumes']);
      expect(nodeReclaimFor(signal, ONE)).toEqual(['containers', 'images']);
    }
  });

  it('a dedicated image filesystem: nodefs counts logs and volumes and frees nothing; imagefs and containerfs count writable layers', () => {
    expect(podDiskUseCounted('nodefs.available', DEDICATED)).toEqual(['logs', 'localVolumes']);
    expect(nodeReclaimFor('nodefs.inodesFree', DEDICATED)).toEqual([]);
    for (const signal of ['imagefs.available', 'containerfs.inodesFree'] as const) {
      expect(podDiskUseCounted(signal, DEDICATED)).toEqual(['rootfs']);
      expect(nodeReclaimFor(signal, DEDICATED)).toEqual(['containers', 'images']);
    }
  });

  it('a split filesystem: imagefs counts no pod and frees images; nodefs and containerfs count all and free containers', () => {
    expect(podDiskUseCounted('imagefs.available', SPLIT)).toEqual([]);
    expect(nodeReclaimFor('imagefs.available', SPLIT)).toEqual(['images']);
    for (const signal of ['nodefs.available', 'containerfs.available'] as const) {
      expect(podDiskUseCounted(signal, SPLIT)).toEqual(['rootfs', 'logs', 'localVolumes']);
      expect(nodeReclaimFor(signal, SPLIT)).toEqual(['containers']);
    }
  });

  it('memory and pids are not disk signals', () => {
    expect(nodeReclaimFor('memory.available', SPLIT)).toEqual([]);
  });
});

describe('the manager on each layout', () => {
  const pod = (name: string, priority = 0): Pod => ({
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      priority,
      containers: [{ name: 'main', image: 'busybox' }],
      volumes: [{ name: 'scratch', emptyDir: {} }],
    },
  });
  // writer: 5 GiB in its writable layer (100 inodes); talker: 2 GiB of logs (400 inodes: rotated files); hoarder:
  // 3 GiB in its emptyDir (one inode).
  const use: Record<
    string,
    { rootfs: number; logs: number; volume: number; rootfsInodes: number; logsInodes: number }
  > = {
    writer: { rootfs: 5 * Gi, logs: 0, volume: 0, rootfsInodes: 100, logsInodes: 1 },
    talker: { rootfs: 0, logs: 2 * Gi, volume: 0, rootfsInodes: 1, logsInodes: 400 },
    hoarder: { rootfs: 0, logs: 0, volume: 3 * Gi, rootfsInodes: 1, logsInodes: 1 },
  };
  const fs = (availableGi: number) => ({
    capacityBytes: 100 * Gi,
    availableBytes: availableGi * Gi,
    usedBytes: (100 - availableGi) * Gi,
    inodes: 1000,
    inodesFree: 500,
    inodesUsed: 500,
  });
  function snapshot(atMs: number, free: { node: number; image: number; container: number }, layout?: DiskLayout) {
    return {
      atMs,
      node: {
        cpuNs: 0,
        memory: { available: 4 * Gi } as StatsSnapshot['node']['memory'],
        network: { interfaces: [] },
        fs: fs(free.node),
        imageFs: fs(free.image),
        containerFs: fs(free.container),
        diskLayout: layout,
        rlimit: { maxpid: 4000, curproc: 100 },
      },
      kubelet: { cpuNs: 0, rss: 0, usage: 0, workingSet: 0, pageFaults: 0, majorPageFaults: 0 },
      containers: Object.entries(use).map(([name, u]) => ({
        id: name,
        name: 'main',
        podUid: `uid-${name}`,
        podName: name,
        podNamespace: 'default',
        atMs,
        rootfsUsed: u.rootfs,
        logsUsed: u.logs,
        rootfsInodesUsed: u.rootfsInodes,
        logsInodesUsed: u.logsInodes,
      })),
      podFiles: new Map(),
      pods: new Map(),
    } satisfies StatsSnapshot;
  }

  function run(
    layout: DiskLayout | undefined,
    free: { node: number; image: number; container: number },
    o: { separateDiskGc?: boolean; pods?: Pod[]; thresholds?: Threshold[] } = {},
  ) {
    const reclaimed: string[] = [];
    const evicted: { name: string; message: string }[] = [];
    const clock = new FakeClock(10_000);
    let atMs = 10_000;
    const m = new EvictionManager({
      thresholds: o.thresholds ?? hard({ 'nodefs.available': '10%', 'imagefs.available': '15%' }),
      transitionMs: 300_000,
      memoryCapacityBytes: 8 * Gi,
      // Each read is a new sample: the reclaim is judged on one taken after it (nothing was freed here).
      snapshot: () => snapshot(atMs++, free, layout),
      activePods: () => o.pods ?? Object.keys(use).map((name) => pod(name)),
      isStatic: () => false,
      volumeUsage: (uid) => [
        { name: 'scratch', usedBytes: use[uid.slice(4)].volume, inodesUsed: 1, localEphemeral: true },
      ],
      reclaim: {
        containers: async () => reclaimed.push('containers'),
        images: async () => reclaimed.push('images'),
      },
      separateDiskGc: o.separateDiskGc,
      evict: (p, message) => evicted.push({ name: p.metadata.name!, message }),
      clock,
      logger: silentLogger,
    });
    return { m, reclaimed, evicted };
  }

  it('one filesystem: nodefs pressure frees containers and images, then evicts the largest writer', async () => {
    const { m, reclaimed, evicted } = run(ONE, { node: 5, image: 5, container: 5 });
    expect((await m.synchronize())?.metadata.name).toBe('writer');
    expect(reclaimed).toEqual(['containers', 'images']);
    expect(evicted[0].message).toBe(
      // 10 % as upstream's float32 makes it, in bytes.
      'The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. ' +
        'Container main was using 5Gi, request is 0, has larger consumption of ephemeral-storage. ',
    );
  });

  it("inode pressure ranks the pods by their inodes, their logs' included (upstream podDiskUsage)", async () => {
    // Half of the 1,000 inodes are free, below a 60 % threshold.
    const { m, evicted } = run(
      ONE,
      { node: 50, image: 50, container: 50 },
      { thresholds: hard({ 'nodefs.inodesFree': '60%' }) },
    );
    expect((await m.synchronize())?.metadata.name).toBe('talker');
    expect(evicted[0].message).toMatch(/^The node was low on resource: inodes\. /);
  });

  it('a dedicated image filesystem: nodefs pressure frees nothing and evicts by logs and volumes', async () => {
    const { m, reclaimed, evicted } = run(DEDICATED, { node: 5, image: 50, container: 50 });
    expect((await m.synchronize())?.metadata.name).toBe('hoarder');
    expect(reclaimed).toEqual([]);
    expect(evicted.map((e) => e.name)).toEqual(['hoarder']);
  });

  it('a dedicated image filesystem: imagefs pressure frees containers and images and evicts by writable layer', async () => {
    const { m, reclaimed } = run(DEDICATED, { node: 50, image: 5, container: 5 });
    expect((await m.synchronize())?.metadata.name).toBe('writer');
    expect(reclaimed).toEqual(['containers', 'images']);
  });

  it("a split filesystem: containerfs pressure (nodefs' threshold) frees containers only", async () => {
    const { m, reclaimed } = run(SPLIT, { node: 50, image: 50, container: 5 });
    expect((await m.synchronize())?.metadata.name).toBe('writer');
    expect(reclaimed).toEqual(['containers']);
    expect([...m.conditions()]).toEqual(['DiskPressure']);
  });

  it('a split filesystem: imagefs pressure frees images only and evicts by priority (no pod uses that filesystem)', async () => {
    const pods = [pod('writer', 10), pod('talker', 0), pod('hoarder', 5)];
    const { m, reclaimed } = run(SPLIT, { node: 50, image: 5, container: 50 }, { pods });
    expect((await m.synchronize())?.metadata.name).toBe('talker');
    expect(reclaimed).toEqual(['images']);
  });

  it('with KubeletSeparateDiskGC off, a split filesystem stops every pass with upstream error', async () => {
    const { m, evicted } = run(SPLIT, { node: 5, image: 5, container: 5 }, { separateDiskGc: false });
    await expect(m.synchronize()).rejects.toThrow(
      'KubeletSeparateDiskGC is turned off but we still have a split filesystem',
    );
    await expect(m.synchronize()).rejects.toThrow('KubeletSeparateDiskGC is turned off');
    expect(evicted).toEqual([]);
  });

  it('before the runtime has shown its filesystems, one filesystem is assumed', async () => {
    const { m, reclaimed } = run(undefined, { node: 5, image: 50, container: 50 });
    expect((await m.synchronize())?.metadata.name).toBe('writer');
    expect(reclaimed).toEqual(['containers', 'images']);
  });
});
