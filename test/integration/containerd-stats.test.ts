/**
 * /stats/summary on real containers (containerd, CNI): upstream's field names only; a container
 * burning CPU and one holding memory show it, with rates after two samples; an emptyDir written
 * into shows its bytes; the pod's CPU, memory, network (its own namespace) and process count come
 * from its cgroups, as upstream's cAdvisor reads them — never from ListPodSandboxStats, which
 * containerd answers by running `runc ps` for every task.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CriRuntime } from '../../src/cri/services.js';
import { TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import { httpGet, until } from '../e2e/helpers.js';
import { fieldNames, UPSTREAM_FIELDS } from '../e2e/summary-fields.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';
import { createBoundClaim } from '../fixtures/apiserver/bound-claim.js';

const node = 'ctrd-stats-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-stats-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;
type Obj = Record<string, any>;
const img = TEST_IMAGES.busybox;

beforeAll(
  async () => ({ ctrd, cri, c } = await startContainerdCluster({ dir, node, config: ['volumeStatsAggPeriod: 1s'] })),
  60_000,
);
afterAll(() => stopContainerdCluster({ ctrd, cri, c, dir }), 90_000);

describe('stats on containerd', () => {
  it('reports what moves: CPU of a busy container, memory held, bytes in an emptyDir, network and processes of the pod', async () => {
    c.api.store.create(
      'pods',
      boundPod('load', node, {
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'burner', image: img, command: ['sh', '-c', 'while :; do :; done'] },
          // dd fills a 96 MiB buffer, then waits forever to write it into a pipe nobody reads.
          { name: 'hog', image: img, command: ['sh', '-c', 'dd if=/dev/zero bs=96M count=1 2>/dev/null | sleep 3600'] },
          {
            name: 'writer',
            image: img,
            command: ['sh', '-c', 'dd if=/dev/urandom of=/data/blob bs=1M count=24 2>/dev/null; sleep 3600'],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      }),
    );
    const uid = await until(
      () => c.api.store.get('pods', 'default', 'load')?.metadata?.uid as string | undefined,
      10_000,
      'pod uid',
    );
    const summary = async () => JSON.parse((await httpGet(`http://127.0.0.1:${c.ports.ro}/stats/summary`)).body) as Obj;
    const ctr = (p: Obj, n: string) => p.containers?.find((x: Obj) => x.name === n);
    const p = await until(
      async () => {
        const pod = (await summary()).pods?.find((x: Obj) => x.podRef.uid === uid);
        // The pod's own rate too: it needs two samples of every container, which can lag the burner's.
        return pod &&
          ctr(pod, 'burner')?.cpu?.usageNanoCores > 1e8 &&
          pod.cpu?.usageNanoCores > 1e8 &&
          ctr(pod, 'hog')?.memory?.workingSetBytes > 80 * 2 ** 20 &&
          pod.volume?.find((v: Obj) => v.name === 'data')?.usedBytes >= 24 * 2 ** 20 &&
          pod.network
          ? pod
          : undefined;
      },
      90_000,
      'cpu, memory, volume and network of the load pod',
    );
    const s = await summary();
    expect([...fieldNames(s)].filter((f) => !UPSTREAM_FIELDS.has(f))).toEqual([]);
    expect(p.cpu.usageNanoCores).toBeGreaterThan(1e8);
    expect(p.memory.workingSetBytes).toBeGreaterThan(80 * 2 ** 20);
    // The pod's CPU and memory are its cgroup's: they hold all of its containers'
    // (the pod's cgroup is read just after the containers' stats, so allow a little either way).
    const sumOf = (f: (c: Obj) => number) => p.containers.reduce((a: number, c: Obj) => a + f(c), 0);
    expect(p.cpu.usageCoreNanoSeconds).toBeGreaterThan(0.9 * sumOf((c) => c.cpu.usageCoreNanoSeconds));
    expect(p.memory.usageBytes).toBeGreaterThan(0.9 * sumOf((c) => c.memory.usageBytes));
    const cadvisor = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics/cadvisor`)).body;
    const podWs =
      /container_memory_working_set_bytes\{container="",id="([^"]+)",image="",name="",namespace="default",pod="load"\} (\d+)/.exec(
        cadvisor,
      );
    expect(podWs?.[1]).toMatch(new RegExp(`^${ctrd.cgroupRoot}/kubepods/(burstable/|besteffort/)?pod${uid}$`));
    expect(Number(podWs?.[2])).toBeGreaterThan(80 * 2 ** 20);
    // The QoS tree as cAdvisor exports it: kubepods and the pod's class (BestEffort: no resources) hold the load pod's
    // memory.
    expect(podWs?.[1]).toBe(`${ctrd.cgroupRoot}/kubepods/besteffort/pod${uid}`);
    const treeWs = (id: string) =>
      Number(
        new RegExp(
          `container_memory_working_set_bytes\\{container="",id="${id}",image="",name="",namespace="",pod=""\\} (\\d+)`,
        ).exec(cadvisor)?.[1],
      );
    expect(treeWs(`${ctrd.cgroupRoot}/kubepods`)).toBeGreaterThan(0.9 * Number(podWs?.[2]));
    expect(treeWs(`${ctrd.cgroupRoot}/kubepods/besteffort`)).toBeGreaterThan(0.9 * Number(podWs?.[2]));
    // The pod's packets, from its own network namespace (cAdvisor's counters beside CRI's bytes).
    const packets = new RegExp(
      `^container_network_receive_packets_total\\{container="",id="[^"]+",image="",interface="eth0",name="",namespace="default",pod="load"\\} (\\d+)`,
      'm',
    ).exec(cadvisor);
    expect(Number(packets?.[1])).toBeGreaterThan(0);
    expect(p.network).toMatchObject({ name: 'eth0', rxBytes: expect.any(Number), txBytes: expect.any(Number) });
    expect(p.process_stats.process_count).toBeGreaterThanOrEqual(3);
    const ops = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(ops).toMatch(/^kubelet_runtime_operations_total\{operation_type="list_container_stats"\} [1-9]/m);
    expect(ops).not.toContain('operation_type="list_podsandbox_stats"');
    expect(p['ephemeral-storage'].usedBytes).toBeGreaterThanOrEqual(24 * 2 ** 20);
    expect(s.node.cpu.usageNanoCores).toBeGreaterThan(1e8);
    // System containers: the pods' kubepods cgroup holds the burner's CPU and the hog's memory; the kubelet's own
    // figures.
    const sys = (n: string) => s.node.systemContainers.find((x: Obj) => x.name === n);
    expect(sys('pods').cpu.usageNanoCores).toBeGreaterThan(1e8);
    expect(sys('pods').memory.workingSetBytes).toBeGreaterThan(80 * 2 ** 20);
    expect(sys('kubelet').memory.workingSetBytes).toBeGreaterThan(0);
    // Many loops wait on the agent's one abort signal: no "possible EventTarget memory leak" warning for that.
    expect(c.kubelet.output()).not.toContain('MaxListenersExceededWarning');
  }, 120_000);

  it("meets upstream's SummaryAPI bounds for memory (NodeConformance summary_test): what is left under a limit, page faults, RSS", async () => {
    const Kb = 1000;
    const Mb = 1000 * Kb;
    c.api.store.create(
      'pods',
      boundPod('limited', node, {
        terminationGracePeriodSeconds: 1,
        containers: [
          // Upstream's summary test pod: a memory limit of 80M, which gives the container and the pod availableBytes.
          {
            name: 'busybox-container',
            image: img,
            command: ['sh', '-c', 'echo some bytes > /f; sleep 3600'],
            resources: { limits: { memory: '80M' } },
          },
        ],
      }),
    );
    const summary = async () => JSON.parse((await httpGet(`http://127.0.0.1:${c.ports.ro}/stats/summary`)).body) as Obj;
    const p = await until(
      async () => {
        const pod = (await summary()).pods?.find((x: Obj) => x.podRef.name === 'limited');
        return pod?.containers?.[0]?.memory?.workingSetBytes && pod.memory?.workingSetBytes ? pod : undefined;
      },
      60_000,
      'the limited pod measured',
    );
    const bounded = (lo: number, hi: number) =>
      expect.toSatisfy((v: unknown) => typeof v === 'number' && v >= lo && v <= hi);
    const memoryOf = (o: { available: unknown }) => ({
      time: expect.any(String),
      availableBytes: o.available,
      usageBytes: bounded(10 * Kb, 80 * Mb),
      workingSetBytes: bounded(10 * Kb, 80 * Mb),
      rssBytes: bounded(1 * Kb, 80 * Mb),
      pageFaults: bounded(0, 1e9),
      majorPageFaults: bounded(0, 1e9),
    });
    expect(p.containers[0].memory).toEqual({
      ...memoryOf({ available: bounded(1 * Kb, 80 * Mb) }),
      pageFaults: bounded(100, 1e9),
    });
    expect(p.memory).toEqual(memoryOf({ available: bounded(1 * Kb, 80 * Mb) }));
    // Left under the limit: limit − working set, as cAdvisor.
    expect(p.containers[0].memory.availableBytes + p.containers[0].memory.workingSetBytes).toBeGreaterThan(79 * Mb);
    const s = await summary();
    const capacity = s.node.memory.availableBytes + s.node.memory.workingSetBytes;
    expect(s.node.memory).toMatchObject({
      rssBytes: bounded(1 * Kb, capacity),
      pageFaults: bounded(1000, Number.MAX_SAFE_INTEGER),
      majorPageFaults: expect.any(Number),
    });
    for (const sys of s.node.systemContainers as Obj[]) {
      expect([sys.name, sys.memory]).toEqual([
        sys.name,
        expect.objectContaining({
          pageFaults: bounded(1000, Number.MAX_SAFE_INTEGER),
          majorPageFaults: expect.any(Number),
        }),
      ]);
      // Only the pods' cgroup is limited (node allocatable); the kubelet's and the runtime's are not.
      if (sys.name === 'pods') expect(sys.memory.availableBytes).toEqual(bounded(1 * Kb, capacity));
      else expect(sys.memory.availableBytes).toBeUndefined();
    }
    // /metrics/cadvisor reads the container's own cgroup as cAdvisor: the spec limit, page cache, processes, the CPU
    // split.
    const cadvisor = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics/cadvisor`)).body;
    const series = (name: string) =>
      Number(
        new RegExp(`^${name}\\{container="busybox-container",[^}]*pod="limited"\\} (\\S+)`, 'm').exec(cadvisor)?.[1] ??
          NaN,
      );
    expect(series('container_spec_memory_limit_bytes')).toBeGreaterThan(79 * Mb);
    expect(series('container_spec_memory_limit_bytes')).toBeLessThanOrEqual(80 * Mb);
    expect(series('container_memory_cache')).toBeGreaterThanOrEqual(0);
    expect(series('container_processes')).toBeGreaterThanOrEqual(1);
    expect(
      series('container_cpu_user_seconds_total') + series('container_cpu_system_seconds_total'),
    ).toBeGreaterThanOrEqual(0);
    // No swap for it (upstream's NoSwap; this kernel accounts swap per cgroup): memory+swap capped at its limit.
    const limitedId = new RegExp(
      `^container_last_seen\\{container="busybox-container",id="([^"]+)",[^}]*pod="limited"\\}`,
      'm',
    ).exec(cadvisor)?.[1];
    if (existsSync('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'))
      expect(
        Number(readFileSync(join('/sys/fs/cgroup/memory', limitedId ?? '', 'memory.memsw.limit_in_bytes'), 'utf8')),
      ).toBe(series('container_spec_memory_limit_bytes'));
    // No CPU quota here: no CFS series, as cAdvisor.
    expect(cadvisor).not.toMatch(/^container_cpu_cfs_periods_total\{container="busybox-container"/m);
    // A busy container under a 100m quota is throttled, which the usual CPUThrottlingHigh alert reads.
    c.api.store.create(
      'pods',
      boundPod('throttled', node, {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'spin',
            image: img,
            command: ['sh', '-c', 'while :; do :; done'],
            resources: { limits: { cpu: '100m', memory: '16Mi' } },
          },
          // Writes past the page cache (O_DIRECT), so the bios are its own.
          {
            name: 'io',
            image: img,
            command: [
              'sh',
              '-c',
              'while :; do dd if=/dev/zero of=/tmp/f bs=64k count=16 oflag=direct 2>/dev/null; sleep 0.2; done',
            ],
          },
        ],
      }),
    );
    const throttled = (name: string) => async () =>
      Number(
        new RegExp(`^${name}\\{container="spin",[^}]*pod="throttled"\\} (\\S+)`, 'm').exec(
          (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics/cadvisor`)).body,
        )?.[1] ?? 0,
      );
    await until(
      async () => (await throttled('container_cpu_cfs_throttled_periods_total')()) > 0,
      40_000,
      'throttled periods',
    );
    expect(await throttled('container_cpu_cfs_periods_total')()).toBeGreaterThan(0);
    expect(await throttled('container_cpu_cfs_throttled_seconds_total')()).toBeGreaterThan(0);
    expect(await throttled('container_spec_cpu_quota')()).toBe(10000);
    expect(await throttled('container_spec_cpu_period')()).toBe(100000);
    // Its block I/O by device, as cAdvisor (the storage I/O panels). With cgroup v1 this kernel counts a
    // cgroup's bios only once blk-throttle is on for the device's queue: the container's own cgroup gets
    // a write limit far above what it writes (the cgroup goes with the container).
    const cadvisorText = async () => (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics/cadvisor`)).body;
    const cgroup = await until(
      async () =>
        /^container_last_seen\{container="io",id="([^"]+)",[^}]*pod="throttled"\}/m.exec(await cadvisorText())?.[1],
      40_000,
      'the io container',
    );
    const dev = statSync(dir).dev;
    const [major, minor] = [(dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00)];
    if (existsSync('/sys/fs/cgroup/blkio'))
      writeFileSync(
        join('/sys/fs/cgroup/blkio', cgroup, 'blkio.throttle.write_bps_device'),
        `${major}:${minor} ${2 ** 40}\n`,
      );
    const written = await until(
      async () => {
        const m =
          /^container_fs_writes_bytes_total\{container="io",device="([^"]*)",[^}]*pod="throttled"\} (\S+)/m.exec(
            await cadvisorText(),
          );
        return m && Number(m[2]) > 0 ? m : undefined;
      },
      40_000,
      'bytes written by the io container',
    );
    expect(written[1]).toMatch(/^\/dev\//);
    const metrics = await cadvisorText();
    const line = (name: string) =>
      Number(
        new RegExp(`^${name}\\{container="io",device="${written[1]}",[^}]*pod="throttled"\\} (\\S+)`, 'm').exec(
          metrics,
        )?.[1] ?? NaN,
      );
    expect(line('container_fs_writes_total')).toBeGreaterThan(0);
    expect(line('container_fs_writes_bytes_total')).toBeGreaterThanOrEqual(Number(written[2]));
    expect(metrics).toMatch(
      new RegExp(
        `^container_blkio_device_usage_total\\{container="io",device="${written[1]}",[^}]*major="${major}",minor="${minor}",[^}]*operation="Write",pod="throttled"\\} [1-9]`,
        'm',
      ),
    );
    // promtool accepts the exposition with these series.
    const check = spawnSync('promtool', ['check', 'metrics'], { input: await cadvisorText() });
    expect([check.status, check.stdout.toString() + check.stderr.toString()]).toEqual([0, '']);
    // A container without a limit has nothing "available" under one (containerd says 0 for it).
    const load = s.pods.find((x: Obj) => x.podRef.name === 'load');
    if (load)
      expect(load.containers.map((x: Obj) => x.memory.availableBytes)).toEqual(load.containers.map(() => undefined));
  }, 150_000);

  it("a claim on a local PV: its filesystem's figures with its pvcRef, and kubelet_volume_stats_* for it; a hostPath PV's claim is not measured, as upstream", async () => {
    const api = c.api.store;
    const claim = (name: string, volumeName: string, source: Obj) =>
      createBoundClaim(api, {
        volume: {
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: volumeName },
          spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], ...source },
        },
        claim: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'default' } },
      });
    claim('local-claim', 'pv-local', { local: { path: dir } });
    claim('host-claim', 'pv-host', { hostPath: { path: dir } });
    api.create(
      'pods',
      boundPod('claims', node, {
        containers: [
          {
            name: 'main',
            image: img,
            command: ['sleep', '3600'],
            volumeMounts: [
              { name: 'l', mountPath: '/l' },
              { name: 'h', mountPath: '/h' },
              { name: 'scratch', mountPath: '/s' },
            ],
          },
        ],
        volumes: [
          { name: 'l', persistentVolumeClaim: { claimName: 'local-claim' } },
          { name: 'h', persistentVolumeClaim: { claimName: 'host-claim' } },
          { name: 'scratch', emptyDir: {} },
        ],
      }),
    );
    const uid = await until(
      () => api.get('pods', 'default', 'claims')?.metadata?.uid as string | undefined,
      10_000,
      'pod uid',
    );
    const summary = async () => JSON.parse((await httpGet(`http://127.0.0.1:${c.ports.ro}/stats/summary`)).body) as Obj;
    const p = await until(
      async () => {
        const pod = (await summary()).pods?.find((x: Obj) => x.podRef.uid === uid);
        return pod?.volume?.length === 2 && pod['ephemeral-storage'] ? pod : undefined;
      },
      40_000,
      'volume stats of the claims pod',
    );
    const local = p.volume.find((v: Obj) => v.name === 'l');
    expect(local.pvcRef).toEqual({ name: 'local-claim', namespace: 'default' });
    expect(local.capacityBytes).toBeGreaterThan(0);
    expect(local.usedBytes).toBeGreaterThan(0);
    expect(local.inodesUsed).toBe(local.inodes - local.inodesFree);
    expect(p.volume.find((v: Obj) => v.name === 'scratch').pvcRef).toBeUndefined();
    // The claim is not the pod's ephemeral storage: only the emptyDir and the containers' own are.
    expect(p['ephemeral-storage'].usedBytes).toBeLessThan(local.usedBytes);
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    const series = (name: string) => [
      ...metrics.matchAll(new RegExp(`^kubelet_volume_stats_${name}\\{([^}]*)\\} (\\S+)$`, 'gm')),
    ];
    for (const name of ['capacity_bytes', 'available_bytes', 'used_bytes', 'inodes', 'inodes_free', 'inodes_used']) {
      expect(series(name).map((m) => m[1])).toEqual(['namespace="default",persistentvolumeclaim="local-claim"']);
      expect(Number(series(name)[0][2])).toBeGreaterThan(0);
    }
    expect(metrics).toContain('# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume');
    api.remove('pods', 'default', 'claims');
  }, 60_000);
});
