/**
 * Soak (issue 13): the real CLI on the embedded runtime with 110 pods, for SOAK_SECONDS (default
 * 600) under
 *  - 50 concurrent exec sessions over WebSocket v5 through 10250, one after another per worker,
 *    each sending 1 MiB of random data and its sha256 (stderr): every checksum must match;
 *  - 100 log followers (follow=true through 10250), each on a pod for 10–40 s, then the next:
 *    within a session every line number follows the previous one (no line missed, none twice);
 *  - a stream of bad manifests (alias bomb, broken YAML, a FIFO, an oversized file, a duplicate
 *    name), each written, then removed a moment later;
 *  - SOAK_ATTACHERS (20) attach sessions at a time over WebSocket and SPDY, each dropped by its
 *    client at a random point while the containers print;
 *  - the runtime killed (SIGKILL) half-way and started again 5 s later: the runtime is the
 *    process-runtime daemon (`tskubelet process-runtime`) for that;
 * then the kubelet's RSS, V8 heap in use and open file descriptors, and the node's processes,
 * mounts, cgroups and the runtime's state files, SOAK_SETTLE_SECONDS (60) after the load stopped,
 * against their baseline (110 pods running, before the load). Prints a table and writes
 * bench/results/soak.json. Not part of the tests.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodList } from '../src/api/types.js';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, until } from '../test/e2e/helpers.js';
import { droppedSpdy, droppedWebSocket, wsSession } from '../test/e2e/streaming-helpers.js';
import { machine, percentile, report, round, sampleProcess } from './lib.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const PODS = Number(process.env.SOAK_PODS ?? 110);
const EXECS = Number(process.env.SOAK_EXECS ?? 50);
const FOLLOWERS = Number(process.env.SOAK_FOLLOWERS ?? 100);
const SETTLE_SECONDS = Number(process.env.SOAK_SETTLE_SECONDS ?? 60);
const ATTACHERS = Number(process.env.SOAK_ATTACHERS ?? 20);
const node = 'soak';
const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-soak-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const podYaml = (name: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, 'i=0; while true; do echo line $i; i=$((i+1)); sleep 0.5; done']\n`;
for (let i = 0; i < PODS; i++) writeFileSync(join(manifests, `p${i}.yaml`), podYaml(`p${i}`));

const ports = await freeKubeletPorts();
// A heap snapshot (SIGUSR2) forces a full GC first: the figures before and after compare live memory, not garbage.
const diag = join(dir, 'diag');
mkdirSync(diag);
process.env.NODE_OPTIONS =
  `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${diag}`.trim();
const runtimeRoot = join(dir, 'runtime');
const socket = join(dir, 'cri.sock');
const startRuntime = () =>
  startKubelet([
    'process-runtime',
    '--listen',
    `unix://${socket}`,
    '--root-dir',
    runtimeRoot,
    '--node-ip',
    '127.0.0.1',
  ]);
let runtime = startRuntime();
await until(() => runtime.output().includes('process runtime serving CRI'), 20_000, 'runtime serving');
const kubelet = startKubelet(
  kubeletArgs({
    dir,
    ports,
    node,
    manifests,
    // 110 pods pulling `busybox` (Always) at once would meet registryPullQPS (5/s, as upstream) and back off: the soak
    // does not measure pull throttling.
    extra: ['--file-check-frequency', '2s', '--container-runtime-endpoint', `unix://${socket}`, '--registry-qps', '0'],
  }),
);
const pid = kubelet.proc.pid!;
const pki = {
  ca: join(root, 'pki', 'ca.crt'),
  cert: join(root, 'pki', 'admin.crt'),
  key: join(root, 'pki', 'admin.key'),
};
const tlsOpts = () => ({ ca: readFileSync(pki.ca), cert: readFileSync(pki.cert), key: readFileSync(pki.key) });
const fds = () => readdirSync(`/proc/${pid}/fd`).length;
/** Forces a full GC in the kubelet (through a heap snapshot, then deleted). */
async function collectGarbage(): Promise<void> {
  const before = new Set(readdirSync(diag));
  process.kill(pid, 'SIGUSR2');
  const file = await until(
    () => readdirSync(diag).find((f) => !before.has(f) && f.endsWith('.heapsnapshot')),
    60_000,
    'heap snapshot',
  );
  let size = -1;
  for (;;) {
    await sleep(1000);
    const now = statSync(join(diag, file)).size;
    if (now === size) break;
    size = now;
  }
  if (process.env.SOAK_KEEP_SNAPSHOTS) execFileSync('cp', [join(diag, file), process.env.SOAK_KEEP_SNAPSHOTS]);
  rmSync(join(diag, file), { force: true });
}

/** The kubelet's V8 heap in use, heap size and external memory (its own /metrics): tells a leak from memory kept for reuse. */
async function heapOf(): Promise<{ heap: number; heapTotal: number; external: number }> {
  const text = (await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body;
  const v = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    heap: v('nodejs_heap_size_used_bytes'),
    heapTotal: v('nodejs_heap_size_total_bytes'),
    external: v('nodejs_external_memory_bytes'),
  };
}
const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };

/** What the node holds besides the kubelet's own memory: processes, mounts and cgroups (node-wide), and the runtime's state files. */
function nodeFootprint(): { processes: number; mounts: number; cgroups: number; stateFiles: number } {
  const count = (cmd: string) => Number(execFileSync('sh', ['-c', cmd], { encoding: 'utf8' }).trim());
  const state = ['containers', 'sandboxes'].flatMap((k) =>
    readdirSync(join(runtimeRoot, 'process-runtime', k), { withFileTypes: true }).filter((e) => e.isFile()),
  );
  return {
    processes: readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length,
    mounts: readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).length,
    cgroups: count('find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | wc -l'),
    stateFiles: state.length,
  };
}

const counts = {
  execs: 0,
  execBad: 0,
  execErrors: 0,
  followSessions: 0,
  followLines: 0,
  followGaps: 0,
  followErrors: 0,
  followNoResponse: 0,
  followFirstByteMs: [] as number[],
  badManifests: 0,
  attachSessions: 0,
  runtimeRestarts: 0,
  /** Exec sessions that overlapped the runtime's outage: cut or refused by design, not counted as bad. */
  execsDuringOutage: 0,
};
/** When the runtime was down (from its kill to 5 s after it serves again), once it has been. */
const outage = { from: Infinity, to: -Infinity };
const overlapsOutage = (start: number, end: number) => start <= outage.to && end >= outage.from;
let end = 0;
const failures: Record<string, unknown>[] = [];

/** One exec worker: sessions back to back until the end. */
async function execWorker(w: number): Promise<void> {
  const cmd = ['sh', '-c', 'f=/tmp/soak.$$; head -c 1048576 /dev/urandom > $f; cat $f; sha256sum $f >&2; rm -f $f'];
  const q = cmd.map((c) => `command=${encodeURIComponent(c)}`).join('&');
  while (Date.now() < end) {
    const pod = `p${w % PODS}-${node}`;
    const started = Date.now();
    try {
      const r = await wsSession(
        `wss://127.0.0.1:${ports.port}/exec/default/${pod}/main?${q}&output=1&error=1`,
        ['v5.channel.k8s.io'],
        pki,
      );
      const got = createHash('sha256')
        .update(r.channels.get(1) ?? Buffer.alloc(0))
        .digest('hex');
      const want = (r.channels.get(2) ?? Buffer.alloc(0)).toString().split(' ')[0];
      counts.execs++;
      if (got !== want && overlapsOutage(started, Date.now())) counts.execsDuringOutage++;
      else if (got !== want) {
        counts.execBad++;
        failures.push({
          pod,
          stdoutBytes: r.channels.get(1)?.length ?? 0,
          stderr: (r.channels.get(2) ?? Buffer.alloc(0)).toString().slice(0, 200),
          status: (r.channels.get(3) ?? Buffer.alloc(0)).toString().slice(0, 300),
        });
      }
    } catch (err) {
      if (overlapsOutage(started, Date.now())) counts.execsDuringOutage++;
      else {
        counts.execErrors++;
        failures.push({ pod, error: String(err).slice(0, 300) });
      }
      await sleep(500);
    }
  }
}

/** One follower: follow sessions of 10–40 s on varying pods until the end; checks each session's line numbers. */
async function follower(f: number): Promise<void> {
  let n = 0;
  while (Date.now() < end) {
    const pod = `p${(f + n++ * 7) % PODS}-${node}`;
    const ms = Math.min(10_000 + Math.random() * 30_000, end - Date.now());
    if (ms <= 0) break;
    await new Promise<void>((resolve) => {
      let last = -1;
      let rest = '';
      let responded = false;
      let ended = false;
      const t0 = Date.now();
      const req = https.get(
        `https://127.0.0.1:${ports.port}/containerLogs/default/${pod}/main?follow=true&tailLines=1`,
        tlsOpts(),
        (res) => {
          responded = true;
          counts.followFirstByteMs.push(Date.now() - t0);
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            const lines = (rest + d).split('\n');
            rest = lines.pop() ?? '';
            for (const l of lines) {
              const num = Number(/^line (\d+)$/.exec(l)?.[1]);
              counts.followLines++;
              if (last >= 0 && num !== last + 1) counts.followGaps++;
              last = num;
            }
          });
          res.on('error', () => {});
        },
      );
      req.on('error', (err) => {
        if (ended) return; // our own destroy at the end of the session
        counts.followErrors++;
        failures.push({ pod, follow: String(err).slice(0, 200) });
        resolve();
      });
      setTimeout(() => {
        ended = true;
        req.destroy();
        counts.followSessions++;
        // A session of several seconds without even the response headers is a failure.
        if (!responded && ms >= 5000) {
          counts.followNoResponse++;
          failures.push({ pod, follow: `no response in ${ms} ms` });
        }
        resolve();
      }, ms);
    });
  }
}

/** One attacher: attach sessions back to back until the end, each dropped at a random point. */
async function attacher(a: number): Promise<void> {
  let n = 0;
  while (Date.now() < end) {
    const path = `/attach/default/p${(a + n++ * 11) % PODS}-${node}/main?output=1&error=1`;
    await (n % 2
      ? droppedWebSocket(`wss://127.0.0.1:${ports.port}${path}`, pki, 'v5.channel.k8s.io', 3000)
      : droppedSpdy(ports.port, pki, path, ['error', 'stdout', 'stderr'], 3000));
    counts.attachSessions++;
  }
}

/** Kills the runtime half-way through the load and starts it again 5 s later. */
async function runtimeRestart(): Promise<void> {
  await sleep(Math.max(0, (end - Date.now()) / 2));
  outage.from = Date.now();
  outage.to = Infinity;
  runtime.proc.kill('SIGKILL');
  await sleep(5000);
  runtime = startRuntime();
  await until(() => runtime.output().includes('process runtime serving CRI'), 20_000, 'runtime serving again');
  // The kubelet's channel reconnects within its back-off: a few seconds more count as the outage.
  outage.to = Date.now() + 5000;
  counts.runtimeRestarts++;
}

/** Bad manifests, one after another: each written, then removed. */
async function badManifests(): Promise<void> {
  const bomb = [
    'a: &a ["x","x","x","x","x","x","x","x","x"]',
    ...'bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
  ].join('\n');
  const kinds: [string, () => void][] = [
    ['bomb.yaml', () => writeFileSync(join(manifests, 'bomb.yaml'), bomb)],
    [
      'broken.yaml',
      () => writeFileSync(join(manifests, 'broken.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: [\n'),
    ],
    ['fifo.yaml', () => execFileSync('mkfifo', [join(manifests, 'fifo.yaml')])],
    ['huge.yaml', () => writeFileSync(join(manifests, 'huge.yaml'), `# ${'x'.repeat(11 << 20)}\n`)],
    ['zz-dup.yaml', () => writeFileSync(join(manifests, 'zz-dup.yaml'), podYaml('p0'))],
  ];
  let i = 0;
  while (Date.now() < end) {
    const [name, write] = kinds[i++ % kinds.length];
    try {
      write();
      counts.badManifests++;
      await sleep(3000);
    } finally {
      try {
        unlinkSync(join(manifests, name));
      } catch {
        /* already gone */
      }
    }
    await sleep(1000);
  }
}

try {
  await until(
    async () => {
      const items = (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items;
      return items.length === PODS && items.every((p) => p.status?.phase === 'Running');
    },
    120_000,
    'all pods Running',
  );
  await sleep(15_000);
  await collectGarbage();
  const base = { rss: sampleProcess(pid).rss, fds: fds(), ...(await heapOf()), ...nodeFootprint() };
  end = Date.now() + SECONDS * 1000;
  let peakRss = base.rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, sampleProcess(pid).rss)), 1000);
  await Promise.all([
    ...Array.from({ length: EXECS }, (_, w) => execWorker(w)),
    ...Array.from({ length: FOLLOWERS }, (_, f) => follower(f)),
    ...Array.from({ length: ATTACHERS }, (_, a) => attacher(a)),
    badManifests(),
    runtimeRestart(),
  ]);
  clearInterval(sampler);
  await sleep(SETTLE_SECONDS * 1000);
  await collectGarbage();
  const after = { rss: sampleProcess(pid).rss, fds: fds(), ...(await heapOf()), ...nodeFootprint() };
  const alive = kubelet.proc.exitCode === null && kubelet.proc.signalCode === null;
  const items = (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items;
  const { followFirstByteMs, ...rest } = counts;
  results.load = {
    seconds: SECONDS,
    pods: PODS,
    execWorkers: EXECS,
    followers: FOLLOWERS,
    ...rest,
    followHeadersP50Ms: percentile(followFirstByteMs, 50),
    followHeadersP99Ms: percentile(followFirstByteMs, 99),
  };
  results.footprint = {
    baselineRssMiB: round(base.rss / 2 ** 20),
    peakRssMiB: round(peakRss / 2 ** 20),
    afterRssMiB: round(after.rss / 2 ** 20),
    rssAfterOverBaseline: round(after.rss / base.rss),
    baselineHeapMiB: round(base.heap / 2 ** 20),
    afterHeapMiB: round(after.heap / 2 ** 20),
    baselineHeapTotalMiB: round(base.heapTotal / 2 ** 20),
    afterHeapTotalMiB: round(after.heapTotal / 2 ** 20),
    baselineExternalMiB: round(base.external / 2 ** 20),
    afterExternalMiB: round(after.external / 2 ** 20),
    baselineFds: base.fds,
    afterFds: after.fds,
    baselineProcesses: base.processes,
    afterProcesses: after.processes,
    baselineMounts: base.mounts,
    afterMounts: after.mounts,
    baselineCgroups: base.cgroups,
    afterCgroups: after.cgroups,
    baselineStateFiles: base.stateFiles,
    afterStateFiles: after.stateFiles,
  };
  results.verdict = {
    kubeletAlive: alive,
    podsStillRunning: items.filter((p) => p.status?.phase === 'Running').length,
    everyChecksumMatched: counts.execBad === 0 && counts.execs > 0,
    noFollowerMissedALine: counts.followGaps === 0 && counts.followLines > 0,
    everyFollowerAnswered: counts.followErrors === 0 && counts.followNoResponse === 0,
    fdsBackToBaseline: after.fds <= base.fds + 2,
    rssWithin25PercentOfBaseline: after.rss <= base.rss * 1.25,
    nodeBackToBaseline:
      after.processes <= base.processes &&
      after.mounts <= base.mounts &&
      after.cgroups <= base.cgroups &&
      after.stateFiles <= base.stateFiles,
  };
} finally {
  await kubelet.stop();
  await runtime.stop();
  rmSync(dir, { recursive: true, force: true });
}
if (failures.length) console.log('failures (first 10):', JSON.stringify(failures.slice(0, 10), null, 1));
if (process.env.SOAK_DEBUG)
  console.log(
    kubelet
      .output()
      .split('\n')
      .filter((l) => /"level":(4|5)0/.test(l))
      .slice(0, 40)
      .join('\n'),
  );
report('soak', results);
