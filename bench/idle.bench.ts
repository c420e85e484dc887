/**
 * The idle kubelet: BENCH_IDLE_PODS static pods (default 100; hostNetwork busybox `sleep`) on a
 * private containerd, all Running, then the kubelet's CPU over a steady window from 30 s after
 * the burst to BENCH_IDLE_SECONDS (default 150): the process, its main thread (user / system)
 * and its other threads (V8's and libuv's workers), the main thread's wake-ups per second, its
 * RSS (at the window's end, anonymous and file-backed; the mean and peak of a reading every 5 s),
 * and the CRI calls it made per minute in the window (its own metrics); beside it, the CPU the
 * runtime spent in the same window (containerd and its shims, with the `runc` runs they waited
 * for), which the kubelet's calls drive. BENCH_IDLE_ROUNDS rounds (default 1).
 * Prints a table and writes bench/results/idle.json. Not part of the tests.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, untilServing } from '../test/e2e/helpers.js';
import { startContainerd, TEST_IMAGES } from '../test/fixtures/containerd.js';
import { clearLeftoverPodCgroups, machine, report, round, sampleProcess } from './lib.js';

await clearLeftoverPodCgroups();

const N = Number(process.env.BENCH_IDLE_PODS ?? 100);
const T = Number(process.env.BENCH_IDLE_SECONDS ?? 150);
const ROUNDS = Number(process.env.BENCH_IDLE_ROUNDS ?? 1);
const SETTLE_S = 30;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU ticks (1/100 s) of each thread of `pid`: user and system. */
function threadTicks(pid: number): { user: number; system: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((t) => {
    const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]), system: Number(f[12]) };
  });
}

/** The main thread's wake-ups so far: its voluntary context switches (each a return from epoll_wait, mostly). */
function mainWakeups(pid: number): number {
  return Number(
    /^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))?.[1] ?? NaN,
  );
}

/**
 * CPU ticks of the runtime: every containerd and containerd-shim process, with their reaped
 * children's (the `runc` a shim runs). Benches refuse to run beside another kubelet's pods
 * (lib.ts), so these are this bench's containerd's.
 */
function runtimeTicks(): number {
  let ticks = 0;
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      if (!stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('containerd')) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks;
}

/** The kubelet's CRI call counters (kubelet_runtime_operations_total by operation_type). */
async function criCalls(port: number): Promise<Map<string, number>> {
  const text = (await httpGet(`http://127.0.0.1:${port}/metrics`)).body;
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\S+)$/gm))
    out.set(m[1], Number(m[2]));
  return out;
}

async function once(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-idle-'));
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  const ctrd = await startContainerd();
  const ports = await freeKubeletPorts();
  const k = startKubelet(
    kubeletArgs({
      dir: join(dir, 'k'),
      ports,
      node: 'idle',
      manifests,
      extra: [...ctrd.kubeletFlags, '--max-pods', String(N + 10)],
    }),
  );
  const pid = k.proc.pid!;
  try {
    await untilServing(ports, k);
    for (let i = 0; i < N; i++)
      writeFileSync(
        join(manifests, `p${i}.json`),
        JSON.stringify({
          metadata: { name: `p${i}`, namespace: 'default' },
          spec: {
            hostNetwork: true,
            terminationGracePeriodSeconds: 2,
            containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
          },
        }),
      );
    for (;;) {
      const items = JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items as {
        status?: { phase?: string };
      }[];
      if (items.filter((p) => p.status?.phase === 'Running').length === N) break;
      await sleep(200);
    }
    await sleep(SETTLE_S * 1000);
    // What the window is measured by, at each end.
    const snapshot = async () => ({
      cpu: sampleProcess(pid).cpuSeconds,
      threads: threadTicks(pid),
      wakes: mainWakeups(pid),
      runtime: runtimeTicks(),
      calls: await criCalls(ports.ro),
      t: performance.now(),
    });
    const a = await snapshot();
    // RSS every 5 s through the window: its mean is steadier than one reading, which lands anywhere in the young
    // generation's and the heap's cycles.
    const rssSamples: number[] = [];
    for (const end = performance.now() + (T - SETTLE_S) * 1000; performance.now() < end;) {
      await sleep(Math.min(5000, end - performance.now()));
      rssSamples.push(sampleProcess(pid).rss);
    }
    const b = await snapshot();
    const seconds = (b.t - a.t) / 1000;
    const pct = (ticks: number) => round(ticks / seconds); // ticks are 1/100 s: ticks / s = % of one core
    const main = { user: b.threads[0].user - a.threads[0].user, system: b.threads[0].system - a.threads[0].system };
    const all = (ts: { user: number; system: number }[]) => ts.reduce((a, t) => a + t.user + t.system, 0);
    const perMinute = Object.fromEntries(
      [...b.calls].map(([op, n]) => [op, round(((n - (a.calls.get(op) ?? 0)) * 60) / seconds)]).filter(([, n]) => n),
    );
    return {
      pods: N,
      windowS: Math.round(seconds),
      cpuPct: round(((b.cpu - a.cpu) / seconds) * 100),
      mainUserPct: pct(main.user),
      mainSystemPct: pct(main.system),
      otherThreadsPct: pct(all(b.threads.slice(1)) - all(a.threads.slice(1))),
      runtimeCpuPct: pct(b.runtime - a.runtime),
      mainWakeupsPerS: round((b.wakes - a.wakes) / seconds),
      rssMiB: round(sampleProcess(pid).rss / 2 ** 20),
      rssMeanMiB: round(rssSamples.reduce((sum, rss) => sum + rss, 0) / rssSamples.length / 2 ** 20),
      rssMaxMiB: round(Math.max(...rssSamples) / 2 ** 20),
      rssAnonMiB: round(sampleProcess(pid).rssAnon / 2 ** 20),
      rssFileMiB: round(sampleProcess(pid).rssFile / 2 ** 20),
      criCallsPerMinute: perMinute,
    };
  } finally {
    await k.stop();
    await ctrd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
for (let r = 0; r < ROUNDS; r++) results[`round ${r + 1}`] = await once();
report('idle', results);
