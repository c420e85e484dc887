/**
 * Node observability end to end (issue 15) on the embedded runtime: /stats/summary with upstream's
 * field names and values that move (a container burning CPU, one holding memory, one writing into
 * an emptyDir), only_cpu_and_memory, /metrics/resource parsed the way metrics-server parses it,
 * every exposition accepted by `promtool check metrics`, and a real Prometheus scraping /metrics,
 * /metrics/cadvisor and /metrics/resource and answering queries for the pods started here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  freePort,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  unmountTestMounts,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';
import { podResourcesClient } from './pod-resources-client.js';
import { fieldNames, UPSTREAM_FIELDS } from './summary-fields.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-obs-'));
let k: Kubelet;
let ports: KubeletPorts;
let prom: ChildProcess | undefined;
type Obj = Record<string, any>;
const get = async (path: string) => (await httpGet(`http://127.0.0.1:${ports.ro}${path}`)).body;
const summary = async (q = ''): Promise<Obj> => JSON.parse(await get(`/stats/summary${q}`));

/**
 * Every field name the upstream stats/v1alpha1 types define (Summary, NodeStats, PodStats, ContainerStats,
 * CPU/Memory/Network/Fs/Volume/Rlimit/ProcessStats).
 */
/** metrics-server's parse: name, labels, value, explicit ms timestamp. */
function parseProm(text: string): { name: string; labels: Record<string, string>; value: number; ts?: number }[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: (\d+))?$/.exec(l)!;
      const labels = Object.fromEntries(
        [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
      );
      return { name: m[1], labels, value: Number(m[3]), ts: m[4] ? Number(m[4]) : undefined };
    });
}

beforeAll(async () => {
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  const pod = (name: string, script: string, extra = '') =>
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, ${JSON.stringify(script)}]${extra}\n`;
  writeFileSync(join(manifests, 'burner.yaml'), pod('burner', 'while :; do :; done'));
  writeFileSync(
    join(manifests, 'memhog.yaml'),
    pod(
      'memhog',
      'exec python3 -c "x = bytearray(96 * 1024 * 1024); import time; time.sleep(3600)"',
      '\n    resources: {limits: {memory: 200Mi}}',
    ),
  );
  writeFileSync(
    join(manifests, 'writer.yaml'),
    `${pod('writer', 'dd if=/dev/urandom of=/data/blob bs=1M count=24 2>/dev/null; sleep 3600', '\n    volumeMounts: [{name: data, mountPath: /data}]')}  volumes: [{name: data, emptyDir: {}}]\n`,
  );
  const cfg = join(dir, 'config.yaml');
  writeFileSync(
    cfg,
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nvolumeStatsAggPeriod: 1s\nsystemCgroups: /\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n',
  );
  ports = await freeKubeletPorts();
  k = startKubelet(
    kubeletArgs({
      dir,
      ports,
      node: 'obs',
      manifests,
      extra: ['--config', cfg, '--read-only-port', String(ports.ro), '--runtime-cgroups', '/'],
    }),
  );
  await until(
    async () => {
      const items = JSON.parse(await get('/pods')).items as Obj[];
      return items.length === 3 && items.every((p) => p.status?.containerStatuses?.[0]?.state?.running);
    },
    30_000,
    'pods running',
  );
  // Two collector samples after the pods run (the collector samples every 10 s).
  await until(
    async () => {
      const s = await summary();
      return s.pods?.length === 3 && s.pods.every((p: Obj) => p.containers?.[0]?.cpu?.usageNanoCores !== undefined);
    },
    40_000,
    'rates for every container',
  );
}, 90_000);

afterAll(async () => {
  prom?.kill('SIGKILL');
  await k?.stop();
  unmountTestMounts(dir);
  rmSync(dir, { recursive: true, force: true });
});

describe('/stats/summary', () => {
  it('uses only upstream field names and reports what moves', async () => {
    await until(
      async () =>
        (await summary()).pods.find((p: Obj) => p.podRef.name === 'writer-obs')?.volume?.[0]?.usedBytes >=
        24 * 1024 * 1024,
      20_000,
      'volume stats',
    );
    const s = await summary();
    const unknown = [...fieldNames(s)].filter((f) => !UPSTREAM_FIELDS.has(f));
    expect(unknown).toEqual([]);
    expect(s.node).toMatchObject({
      nodeName: 'obs',
      cpu: { usageNanoCores: expect.any(Number), usageCoreNanoSeconds: expect.any(Number) },
      memory: { workingSetBytes: expect.any(Number), availableBytes: expect.any(Number) },
      fs: { capacityBytes: expect.any(Number) },
      rlimit: { maxpid: expect.any(Number), curproc: expect.any(Number) },
      // The node's swap, from /proc/meminfo (0 and 0 on a node without swap).
      swap: { time: expect.any(String), swapUsageBytes: expect.any(Number), swapAvailableBytes: expect.any(Number) },
    });
    // Pressure stall information (KubeletPSI) where the kernel has it: the system's, as /proc/pressure gives it.
    if (existsSync('/proc/pressure/cpu')) {
      const psi = {
        total: expect.any(Number),
        avg10: expect.any(Number),
        avg60: expect.any(Number),
        avg300: expect.any(Number),
      };
      for (const stats of [s.node.cpu, s.node.memory, s.node.io]) expect(stats.psi).toEqual({ some: psi, full: psi });
      const some = Number(/^some .*total=(\d+)$/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))![1]);
      // The summary's counter was read before the file is read here: never more than it.
      expect(s.node.cpu.psi.some.total).toBeLessThanOrEqual(some);
      expect(s.node.cpu.psi.some.total).toBeGreaterThan(0);
      expect(s.node.io.time).toEqual(expect.any(String));
    } else expect(s.node.io).toBeUndefined();
    const meminfo = readFileSync('/proc/meminfo', 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(meminfo)?.[1]) * 1024;
    if (kb('SwapTotal') === 0) expect(s.node.swap).toMatchObject({ swapUsageBytes: 0, swapAvailableBytes: 0 });
    // Named cgroups (--runtime-cgroups, systemCgroups; the root cgroup here) become the runtime and misc system
    // containers.
    expect(s.node.systemContainers.map((c: Obj) => c.name)).toEqual(['kubelet', 'runtime', 'misc', 'pods']);
    const runtimeSys = s.node.systemContainers.find((c: Obj) => c.name === 'runtime');
    expect(runtimeSys.cpu.usageCoreNanoSeconds).toBeGreaterThan(0);
    expect(runtimeSys.memory.workingSetBytes).toBeGreaterThan(0);
    const byName = (n: string) => s.pods.find((p: Obj) => p.podRef.name === `${n}-obs`);
    expect(byName('burner').containers[0].cpu.usageNanoCores).toBeGreaterThan(1e8);
    expect(byName('memhog').containers[0].memory.workingSetBytes).toBeGreaterThan(80 * 1024 * 1024);
    // Under its 200Mi limit (container and pod): what is left, as cAdvisor (limit − working set); none without a limit.
    for (const m of [byName('memhog').containers[0].memory, byName('memhog').memory]) {
      expect(m.availableBytes).toBeGreaterThan(0);
      expect(m.availableBytes + m.workingSetBytes).toBeGreaterThan(190 * 2 ** 20);
      expect(m.availableBytes + m.workingSetBytes).toBeLessThanOrEqual(200 * 2 ** 20);
    }
    expect(byName('burner').containers[0].memory.availableBytes).toBeUndefined();
    expect(byName('burner').memory.availableBytes).toBeUndefined();
    // Page faults everywhere upstream's summary test looks: 96 MiB touched is ~24k of them.
    expect(byName('memhog').containers[0].memory.pageFaults).toBeGreaterThan(20_000);
    expect(byName('memhog').memory.pageFaults).toBeGreaterThan(20_000);
    expect(s.node.memory).toMatchObject({
      rssBytes: expect.any(Number),
      pageFaults: expect.any(Number),
      majorPageFaults: expect.any(Number),
    });
    for (const sys of s.node.systemContainers)
      expect([sys.name, sys.memory.pageFaults >= 1000]).toEqual([sys.name, true]);
    expect(byName('writer').volume[0]).toMatchObject({
      name: 'data',
      usedBytes: expect.any(Number),
      capacityBytes: expect.any(Number),
      inodesUsed: expect.any(Number),
    });
    expect(byName('burner').podRef).toMatchObject({
      name: 'burner-obs',
      namespace: 'default',
      uid: expect.any(String),
    });
    expect(byName('burner').containers[0].logs).toMatchObject({ usedBytes: expect.any(Number) });
    // ListPodSandboxStats: each pod's process count (the writer runs its shell and a sleep).
    expect(byName('burner').process_stats.process_count).toBeGreaterThanOrEqual(1);
    expect(byName('writer').process_stats.process_count).toBeGreaterThanOrEqual(2);
  });

  it('only_cpu_and_memory=true gives only cpu, memory and swap (upstream ListPodCPUAndMemoryStats), on GET and POST', async () => {
    const s = await summary('?only_cpu_and_memory=true');
    expect(Object.keys(s.node).sort()).toEqual(['cpu', 'memory', 'nodeName', 'startTime', 'swap', 'systemContainers']);
    for (const p of s.pods) {
      expect(
        Object.keys(p)
          .filter((x) => x !== 'swap')
          .sort(),
      ).toEqual(['containers', 'cpu', 'memory', 'podRef', 'startTime']);
      for (const c of p.containers)
        expect(Object.keys(c).filter((x) => !['name', 'startTime', 'cpu', 'memory', 'swap'].includes(x))).toEqual([]);
    }
    const post = await new Promise<number>((resolve) => {
      const r = http.request({ host: '127.0.0.1', port: ports.ro, path: '/stats/summary', method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      r.end();
    });
    expect(post).toBe(200);
  });
});

describe('metrics', () => {
  it('/metrics/resource parses as metrics-server parses it: every running pod and container with non-zero cpu and memory and a timestamp', async () => {
    const samples = parseProm(await get('/metrics/resource'));
    expect(samples.find((x) => x.name === 'resource_scrape_error')?.value).toBe(0);
    for (const pod of ['burner-obs', 'memhog-obs', 'writer-obs']) {
      for (const n of [
        'container_cpu_usage_seconds_total',
        'container_memory_working_set_bytes',
        'pod_cpu_usage_seconds_total',
        'pod_memory_working_set_bytes',
      ]) {
        const x = samples.find((y) => y.name === n && y.labels.pod === pod);
        expect(x, `${n} ${pod}`).toBeDefined();
        expect(x!.value).toBeGreaterThan(0);
        expect(x!.ts).toBeGreaterThan(Date.now() - 60_000);
        if (n.startsWith('container_')) expect(x!.labels).toMatchObject({ container: 'main', namespace: 'default' });
      }
    }
    expect(samples.find((x) => x.name === 'node_cpu_usage_seconds_total')!.value).toBeGreaterThan(0);
    expect(samples.find((x) => x.name === 'node_memory_working_set_bytes')!.value).toBeGreaterThan(0);
    expect(samples.find((x) => x.name === 'node_swap_usage_bytes')!.value).toBeGreaterThanOrEqual(0);
    // Containers' swap where the kernel accounts it (v1 memsw, v2): the embedded runtime reports it from their cgroups.
    if (
      existsSync('/sys/fs/cgroup/memory/memory.memsw.usage_in_bytes') ||
      existsSync('/sys/fs/cgroup/cgroup.controllers')
    ) {
      const swapped = samples.filter((x) => x.name === 'container_swap_usage_bytes').map((x) => x.labels.pod);
      expect(swapped.sort()).toEqual(expect.arrayContaining(['burner-obs', 'memhog-obs', 'writer-obs']));
      const podSwap = samples.find((x) => x.name === 'pod_swap_usage_bytes' && x.labels.pod === 'memhog-obs');
      expect(podSwap?.value).toBeGreaterThanOrEqual(0);
      const memhog = (await summary()).pods.find((p: Obj) => p.podRef.name === 'memhog-obs');
      expect(memhog.containers[0].swap).toMatchObject({ time: expect.any(String), swapUsageBytes: expect.any(Number) });
      expect(memhog.swap).toMatchObject({ swapUsageBytes: expect.any(Number) });
    }
  });

  it('/metrics has the kubelet_* metrics operators graph; /metrics/probes and /spec/ answer', async () => {
    const m = await get('/metrics');
    for (const name of [
      'kubelet_running_pods 3',
      'kubelet_running_containers{container_state="running"} 3',
      'kubelet_node_name{node="obs"} 1',
      'kubelet_started_pods_total 3',
      'kubelet_started_pods_errors_total 0',
      // The pod counts (three static pods, no apiserver: no mirror pods to make).
      'kubelet_desired_pods{static="true"} 3',
      'kubelet_active_pods{static="true"} 3',
      'kubelet_mirror_pods 0',
      'kubelet_working_pods{config="desired",lifecycle="sync",static="true"} 3',
      'kubelet_started_containers_total{container_type="container"} 3',
      // Each pod's sandbox, by its runtime handler ("" for the default); no ephemeral container, no rejection.
      'kubelet_run_podsandbox_duration_seconds_count{runtime_handler=""} 3',
      'kubelet_managed_ephemeral_containers 0',
      'kubelet_memory_manager_pinning_requests_total 0',
      'kubelet_lifecycle_handler_http_fallbacks_total 0',
      'kubelet_sleep_action_terminated_early_total 0',
      'kubelet_started_user_namespaced_pods_total 0',
      'kubelet_started_user_namespaced_pods_errors_total 0',
      // The last sweep's orphaned pod directories (none here).
      'kubelet_orphan_pod_cleaned_volumes 0',
      'kubelet_orphan_pod_cleaned_volumes_errors 0',
      // Registered with graceful node shutdown's gates on (the default), 0 without a shutdown recorded.
      'kubelet_graceful_shutdown_start_time_seconds 0',
      'kubelet_graceful_shutdown_end_time_seconds 0',
      '# TYPE kubelet_admission_rejections_total counter',
      // Beta in v1.36's metrics reference, and component-base's counts of the registry.
      "# HELP kubernetes_build_info [BETA] A metric with a constant '1' value",
      'disabled_metrics_total 0',
      'hidden_metrics_total 0',
    ])
      expect(m).toContain(name);
    // Each container's image ensured, counted as upstream counts EnsureImageExists.
    expect(m).toMatch(
      /^kubelet_image_manager_ensure_image_requests_total\{present_locally="(true|false)",pull_policy="(always|ifnotpresent|never)",pull_required="(true|false)"\} [1-9]\d*$/m,
    );
    // The embedded runtime answers RuntimeConfig: no warning that its support ends.
    expect(m).not.toContain('kubelet_cri_losing_support');
    // registered_metrics_total counts the families of each stability level the exposition announces (but its own
    // three, which component-base registers apart).
    for (const level of ['ALPHA', 'BETA']) {
      const announced = m.match(
        new RegExp(`^# HELP (?!(registered|disabled|hidden)_metrics_total )\\S+ \\[${level}\\] `, 'gm'),
      )?.length;
      expect(m).toContain(`registered_metrics_total{deprecated_version="",stability_level="${level}"} ${announced}`);
    }
    for (const name of [
      'kubelet_pod_start_duration_seconds_bucket',
      'kubelet_pod_worker_duration_seconds_bucket',
      // Each pod's first sync: its containers (one each) and the time from its source to its worker.
      'kubelet_containers_per_pod_count_bucket{le="1"} 3',
      'kubelet_pod_worker_start_duration_seconds_count 3',
      'kubelet_pleg_relist_duration_seconds_bucket',
      'kubelet_pleg_relist_interval_seconds_bucket',
      'kubelet_runtime_operations_total{operation_type="list_containers"}',
      'kubelet_runtime_operations_duration_seconds_bucket',
      'kubelet_http_requests_total',
      'kubelet_http_requests_duration_seconds_bucket{le="0.005",long_running="false",method="GET",path="stats",server_type="readonly"}',
      'kubelet_started_containers_total',
      // Upstream's label names and buckets: the pod worker's operation_type, the runtime operations'
      // ExponentialBuckets(.005, 2.5, 14).
      'kubelet_pod_worker_duration_seconds_bucket{le="0.005",operation_type="sync"}',
      'kubelet_runtime_operations_duration_seconds_bucket{le="0.0125",operation_type="list_containers"}',
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
    ])
      expect(m).toContain(name);
    // Each container's log bytes, as upstream's log metrics collector: the summary's logs.usedBytes by pod and
    // container.
    for (const p of (await summary()).pods as Obj[]) {
      for (const container of p.containers as Obj[]) {
        const labels = `{container="${container.name}",namespace="${p.podRef.namespace}",pod="${p.podRef.name}",uid="${p.podRef.uid}"}`;
        expect(m).toMatch(
          new RegExp(`^kubelet_container_log_filesystem_used_bytes${labels.replace(/[{}.()]/g, '\\$&')} \\d+$`, 'm'),
        );
      }
    }
    // The version dashboards show: kubernetes_build_info, the Kubernetes version tskubelet stands in for.
    expect(m).toMatch(
      /^kubernetes_build_info\{[^}]*git_version="v1\.36\.\d+"[^}]*major="1",minor="36",platform="linux\/[a-z0-9]+"\} 1$/m,
    );
    // PLEG last seen: a relist within the last few seconds.
    expect(Date.now() / 1000 - Number(/^kubelet_pleg_last_seen_seconds (\d+)$/m.exec(m)?.[1])).toBeLessThan(5);
    // The host's cgroup version, as its /sys/fs/cgroup says.
    const cgroupVersion = existsSync('/sys/fs/cgroup/cgroup.controllers') ? 2 : 1;
    expect(m).toContain(`\nkubelet_cgroup_version ${cgroupVersion}\n`);
    // v1.36: where the container stats come from (the cgroups, cAdvisor's way). Upstream's on-demand single-pod relist
    // is off by default in v1.36 (PLEGOnDemandRelist, kubernetes/kubernetes#137909): its histogram is there, empty.
    expect(m).toContain('\nkubelet_metrics_provider{provider="cadvisor"} 1\n');
    expect(m).toMatch(/^kubelet_pleg_pod_relist_duration_seconds_count 0$/m);
    expect(await get('/metrics/probes')).toContain('# TYPE prober_probe_total counter');
    const spec = JSON.parse(await get('/spec/'));
    expect(spec).toMatchObject({ num_cores: expect.any(Number), memory_capacity: expect.any(Number) });
    // The machine's disks, as cAdvisor's disk_map: this machine's /sys/block but loop, ram and sr devices.
    const diskMap = spec.disk_map as Record<string, { name: string; major: number; minor: number; size: number }>;
    const disks = readdirSync('/sys/block').filter((n) => !/^(loop|ram|sr)/.test(n));
    expect(
      Object.values(diskMap)
        .map((d) => d.name)
        .sort(),
    ).toEqual(disks.sort());
    for (const [key, d] of Object.entries(diskMap))
      expect([key, d.size]).toEqual([
        `${d.major}:${d.minor}`,
        Number(readFileSync(`/sys/block/${d.name}/size`, 'utf8')) * 512,
      ]);
  });

  it('kubelet_http_inflight_requests counts a request from its arrival to its answer, and one whose client went away', async () => {
    const inflight = (m: string, path: string) =>
      Number(
        new RegExp(
          `^kubelet_http_inflight_requests\\{long_running="false",method="GET",path="${path}",server_type="readonly"\\} (\\S+)$`,
          'm',
        ).exec(m)?.[1],
      );
    // The scrape itself is in flight while it is answered.
    expect(inflight(await get('/metrics'), 'metrics')).toBe(1);
    await get('/pods');
    expect(inflight(await get('/metrics'), 'pods')).toBe(0);
    // Clients that send a request and go away at once: counted, then not.
    for (let i = 0; i < 5; i++) {
      const req = http.get(`http://127.0.0.1:${ports.ro}/stats/summary`);
      req.on('error', () => {});
      req.on('socket', (s) => s.on('connect', () => setTimeout(() => req.destroy(), 1)));
    }
    await until(
      async () => inflight(await get('/metrics'), 'stats') === 0,
      10_000,
      'aborted requests no longer in flight',
    );
  });

  it.runIf(process.getuid?.() === 0)(
    "/metrics/cadvisor reads the embedded runtime's container cgroups as cAdvisor does: limits, cache, processes",
    async () => {
      const body = await get('/metrics/cadvisor');
      const series = (name: string, pod: string) =>
        new RegExp(`^${name}\\{[^}]*container="main"[^}]*pod="${pod}"[^}]*\\} (\\S+)(?: \\d+)?$`, 'm').exec(body)?.[1];
      // memhog's memory limit (200Mi), from its cgroup; the others have none.
      expect(series('container_spec_memory_limit_bytes', 'memhog-obs')).toBe(String(200 * 2 ** 20));
      expect(Number(series('container_spec_cpu_shares', 'burner-obs'))).toBeGreaterThan(0);
      expect(Number(series('container_processes', 'burner-obs'))).toBeGreaterThanOrEqual(1);
      expect(series('container_memory_cache', 'writer-obs')).toBeDefined();
    },
  );

  it("/metrics/slis counts each /healthz run per check, on every port, as upstream's component SLIs; a DELETE resets them", async () => {
    expect((await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status).toBe(200);
    expect((await httpGet(`http://127.0.0.1:${ports.ro}/healthz?verbose`)).status).toBe(200);
    // A single check's path is not a run of /healthz.
    await httpGet(`http://127.0.0.1:${ports.ro}/healthz/ping`);
    const slis = await get('/metrics/slis');
    for (const check of ['ping', 'log', 'syncloop'])
      expect(slis).toContain(`kubernetes_healthcheck{name="${check}",type="healthz"} 1`);
    expect(slis).toContain(
      '# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.',
    );
    expect(slis).toContain('# TYPE kubernetes_healthchecks_total counter');
    const runs = Number(
      /^kubernetes_healthchecks_total\{name="ping",status="success",type="healthz"\} (\d+)$/m.exec(slis)?.[1],
    );
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(spawnSync('promtool', ['check', 'metrics'], { input: slis }).status).toBe(0);
    const reset = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: ports.ro, path: '/metrics/slis', method: 'DELETE' },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(reset).toEqual({ status: 200, body: 'metrics reset\n' });
    expect(await get('/metrics/slis')).toBe('');
  });

  it("promtool accepts every exposition (but for upstream's names its lint flags)", async () => {
    // Upstream's names that promtool's lint flags in the Go kubelet's exposition too (upstream's own lint keeps an
    // exception list of them; their _total renames come in v1.38), kept for the dashboards that use them.
    const count = 'non-histogram and non-summary metrics should not have "_count" suffix';
    const upstreamNames = [
      'kubelet_container_aligned_compute_resources_count counter metrics should have "_total" suffix',
      `kubelet_container_aligned_compute_resources_count ${count}`,
      'kubelet_container_aligned_compute_resources_failure_count counter metrics should have "_total" suffix',
      `kubelet_container_aligned_compute_resources_failure_count ${count}`,
      `kubelet_cpu_manager_exclusive_cpu_allocation_count ${count}`,
      'kubelet_topology_manager_admission_duration_ms metric names should not contain abbreviated units',
      'kubelet_pleg_discard_events counter metrics should have "_total" suffix',
      ...['requests', 'errors'].flatMap((kind) =>
        ['list', 'get_allocatable', 'get'].map(
          (method) => `kubelet_pod_resources_endpoint_${kind}_${method} counter metrics should have "_total" suffix`,
        ),
      ),
    ];
    for (const path of ['/metrics', '/metrics/cadvisor', '/metrics/resource', '/metrics/probes']) {
      const body = await get(path);
      const r = spawnSync('promtool', ['check', 'metrics'], { input: body });
      const out = (r.stdout.toString() + r.stderr.toString()).split('\n').filter(Boolean).sort();
      // promtool lints a family that has a sample: a labelled one once it has a series (pod-resources' after a call).
      const exposed = upstreamNames.filter((line) =>
        new RegExp(`^${line.split(' ')[0]}(_bucket|_sum|_count)?[{ ]`, 'm').test(body),
      );
      if (path === '/metrics') expect([r.status, out]).toEqual([3, exposed.sort()]);
      else expect([path, r.status, out]).toEqual([path, 0, []]);
    }
  });

  it('a real Prometheus scrapes /metrics, /metrics/cadvisor and /metrics/resource and finds the pods', async () => {
    const promPort = await freePort();
    const cfg = join(dir, 'prometheus.yml');
    const job = (name: string, path: string) =>
      `  - job_name: ${name}\n    scrape_interval: 1s\n    metrics_path: ${path}\n    static_configs: [{targets: ['127.0.0.1:${ports.ro}']}]\n`;
    writeFileSync(
      cfg,
      `global: {scrape_interval: 1s}\nscrape_configs:\n${job('kubelet', '/metrics')}${job('cadvisor', '/metrics/cadvisor')}${job('resource', '/metrics/resource')}`,
    );
    prom = spawn(
      'prometheus',
      [
        `--config.file=${cfg}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      {
        stdio: 'ignore',
      },
    );
    const query = async (q: string) =>
      JSON.parse((await httpGet(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`)).body).data
        ?.result as Obj[] | undefined;
    const running = await until(
      async () => (await query('kubelet_running_pods'))?.[0]?.value?.[1],
      40_000,
      'kubelet_running_pods in Prometheus',
    );
    expect(running).toBe('3');
    const cpu = await until(
      async () => query('container_cpu_usage_seconds_total{pod="burner-obs"}').then((r) => (r?.length ? r : undefined)),
      40_000,
      'cadvisor series',
    );
    expect(cpu[0].metric).toMatchObject({ container: 'main', namespace: 'default', pod: 'burner-obs' });
    const node = await until(
      async () => query('node_memory_working_set_bytes').then((r) => (r?.length ? r : undefined)),
      40_000,
      'resource series',
    );
    expect(Number(node[0].value[1])).toBeGreaterThan(0);
    // The machine's pressure (KubeletPSI) where the kernel has it: the seconds some task waited on the CPU.
    if (existsSync('/proc/pressure/cpu')) {
      const waited = await until(
        async () =>
          query('container_pressure_cpu_waiting_seconds_total{id="/"}').then((r) => (r?.length ? r : undefined)),
        40_000,
        'pressure series',
      );
      const kernel = Number(/^some .*total=(\d+)$/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))![1]) / 1e6;
      expect(Number(waited[0].value[1])).toBeGreaterThan(0);
      expect(Number(waited[0].value[1])).toBeLessThanOrEqual(kernel);
    }
  }, 120_000);
});

describe('pod-resources gRPC API', () => {
  it('a real gRPC client lists the pods and their containers, gets one, and reads the allocatable resources', async () => {
    const { grpc, client, call } = await podResourcesClient(join(dir, 'root'));
    try {
      const list = await call<Obj>('List', {});
      expect(list.pod_resources.map((p: Obj) => p.name).sort()).toEqual(['burner-obs', 'memhog-obs', 'writer-obs']);
      expect(list.pod_resources[0]).toMatchObject({
        namespace: 'default',
        containers: [{ name: 'main', devices: [], cpu_ids: [], memory: [] }],
      });
      expect(await call<Obj>('Get', { pod_name: 'burner-obs', pod_namespace: 'default' })).toMatchObject({
        pod_resources: { name: 'burner-obs', containers: [{ name: 'main' }] },
      });
      await expect(call('Get', { pod_name: 'nope', pod_namespace: 'default' })).rejects.toMatchObject({
        code: grpc.status.UNKNOWN,
        details: 'pod nope in namespace default not found',
      });
      expect(await call<Obj>('GetAllocatableResources', {})).toEqual({ devices: [], cpu_ids: [], memory: [] });
      // A method the server does not have, and a request that is not a protobuf message.
      const raw = (path: string, body: Buffer) =>
        new Promise((resolve, reject) =>
          client.makeUnaryRequest(
            path,
            (x: Buffer) => x,
            (x: Buffer) => x,
            body,
            (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res)),
          ),
        );
      await expect(raw('/v1.PodResourcesLister/Nope', Buffer.alloc(0))).rejects.toMatchObject({
        code: grpc.status.UNIMPLEMENTED,
      });
      await expect(raw('/v1.PodResourcesLister/Get', Buffer.from([0xff, 0xff]))).rejects.toMatchObject({
        code: grpc.status.INTERNAL,
      });
      expect((await call<Obj>('List', {})).pod_resources).toHaveLength(3);
      // Every call the server answered, and the failed Get, in upstream's counters.
      const metrics = await get('/metrics');
      expect(metrics).toContain('kubelet_pod_resources_endpoint_requests_total{server_api_version="v1"} 5\n');
      expect(metrics).toContain('kubelet_pod_resources_endpoint_requests_get{server_api_version="v1"} 2\n');
      expect(metrics).toContain('kubelet_pod_resources_endpoint_errors_get{server_api_version="v1"} 1\n');
    } finally {
      client.close();
    }
  });
});
