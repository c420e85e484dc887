/**
 * Streaming benchmarks against the real CLI (dist/) on the embedded process runtime, through
 * 10250 (TLS, client certificate) and the runtime's streaming server:
 *  1. exec stdout throughput: `head -c 256 MiB /dev/zero`, per protocol (MiB/s);
 *  2. exec round trip: connect → run `true` → status, 100 sequential sessions per protocol (p50/p99);
 *  3. the same relay to containerd (private instance, busybox pod): 200 MiB of stdout over
 *     WebSocket v4 (containerd 1.6's streaming server predates v5) through 10250, MiB/s and time to the first byte, BENCH_EXEC_CTRD_ROUNDS rounds
 *     (default 5), median, each round followed by the same exec straight to containerd's streaming URL (the physical limit):
 *     the median of the rounds' ratios and the kubelet's CPU per 200 MiB; then the same two over SPDY (what the apiserver speaks to a kubelet).
 * The WebSocket rows use one counting client (countStdout), lean or keeping each message, so they differ only in the
 * path and the client.
 * Prints a table and writes bench/results/exec.json. Not part of the tests.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, until } from '../test/e2e/helpers.js';
import { spdyExec, wsSession } from '../test/e2e/streaming-helpers.js';
import { clearLeftoverPodCgroups, machine, percentile, report, round, sampleProcess } from './lib.js';
import { startContainerd, TEST_IMAGES } from '../test/fixtures/containerd.js';
import { WebSocket } from 'ws';
import { createCriClient } from '../src/cri/client.js';

await clearLeftoverPodCgroups();

const MIB = Number(process.env.BENCH_EXEC_MIB ?? 256);
const tlsOf = (p: { ca: string; cert: string; key: string }) => ({
  ca: readFileSync(p.ca),
  cert: readFileSync(p.cert),
  key: readFileSync(p.key),
});

/**
 * One exec's stdout over WebSocket, counted and dropped: every throughput row uses this same lean
 * client (the `ws` package), through the kubelet or straight to a runtime, so that the rows differ
 * only in the path. It keeps nothing: a client that held 200 MiB spent twice the CPU of the
 * stream on a 2-core machine and took it from the path being measured.
 */
function countStdout(
  url: string,
  protocol: string,
  tls?: object,
  o: { keep?: boolean } = {},
): Promise<{ bytes: number; seconds: number; firstMs: number }> {
  const base64 = protocol.includes('base64');
  // The second client: a plain one that keeps every message, as a program that reads the whole output does.
  const kept: Buffer[] = [];
  return new Promise((resolve, reject) => {
    let bytes = 0;
    let firstMs = 0;
    const t0 = performance.now();
    const ws = new WebSocket(url, [protocol], { ...tls, perMessageDeflate: false });
    ws.on('message', (d: Buffer) => {
      if (d[0] !== (base64 ? 0x31 : 1)) return;
      if (o.keep) kept.push(d);
      if (!firstMs) firstMs = performance.now() - t0;
      // v4.base64: the channel digit, then base64 (its length gives the bytes exactly).
      bytes += base64
        ? ((d.length - 1) / 4) * 3 - (d[d.length - 1] === 0x3d ? (d[d.length - 2] === 0x3d ? 2 : 1) : 0)
        : d.length - 1;
    });
    ws.on('close', () => {
      kept.length = 0;
      resolve({ bytes, seconds: (performance.now() - t0) / 1000, firstMs });
    });
    ws.on('error', reject);
  });
}
/** The same over SPDY (our SPDY client, counting and dropping stdout): through 10250 with `pki`, or plain to a runtime's streaming server. */
async function countSpdyStdout(
  port: number,
  path: string,
  pki?: { ca: string; cert: string; key: string },
): Promise<{ bytes: number; seconds: number }> {
  let bytes = 0;
  const t0 = performance.now();
  await spdyExec('127.0.0.1', port, path, pki, {
    protocols: ['v4.channel.k8s.io'],
    streams: ['error', 'stdout'],
    onData: (stream, d) => {
      if (stream === 'stdout') bytes += d.length;
    },
  });
  return { bytes, seconds: (performance.now() - t0) / 1000 };
}
const ROUNDS = Number(process.env.BENCH_EXEC_ROUNDS ?? 100);
const dir = mkdtempSync(join(tmpdir(), 'tsk-bench-exec-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
writeFileSync(
  join(manifests, 'shell.yaml'),
  'apiVersion: v1\nkind: Pod\nmetadata: {name: shell}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
);
const ports = await freeKubeletPorts();
const kubelet = startKubelet(kubeletArgs({ dir, ports, node: 'bench', manifests }));
const pki = {
  ca: join(root, 'pki', 'ca.crt'),
  cert: join(root, 'pki', 'admin.crt'),
  key: join(root, 'pki', 'admin.key'),
};
const path = (cmd: string[], q: string) =>
  `/exec/default/shell-bench/main?${cmd.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${q}`;
const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
try {
  await until(
    async () =>
      JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items[0]?.status?.phase === 'Running',
    30_000,
    'pod Running',
  );
  const big = ['head', '-c', String(MIB << 20), '/dev/zero'];
  for (const protocol of ['v5.channel.k8s.io', 'v4.base64.channel.k8s.io']) {
    const r = await countStdout(`wss://127.0.0.1:${ports.port}${path(big, 'output=1')}`, protocol, tlsOf(pki));
    results[`throughput ws ${protocol}`] = {
      MiB: round(r.bytes / 2 ** 20),
      seconds: round(r.seconds),
      MiBps: round(r.bytes / 2 ** 20 / r.seconds),
    };
  }
  {
    const r = await countSpdyStdout(ports.port, path(big, 'output=1'), pki);
    results['throughput spdy v4.channel.k8s.io'] = {
      MiB: round(r.bytes / 2 ** 20),
      seconds: round(r.seconds),
      MiBps: round(r.bytes / 2 ** 20 / r.seconds),
    };
  }
  const rt = async (name: string, once: () => Promise<unknown>) => {
    const lat: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      await once();
      lat.push(performance.now() - t0);
    }
    results[`round trip ${name}`] = {
      sessions: ROUNDS,
      p50Ms: round(percentile(lat, 50)),
      p99Ms: round(percentile(lat, 99)),
    };
  };
  await rt('ws v5', () =>
    wsSession(`wss://127.0.0.1:${ports.port}${path(['true'], 'output=1')}`, ['v5.channel.k8s.io'], pki),
  );
  await rt('spdy v4', () =>
    spdyExec('127.0.0.1', ports.port, path(['true'], 'output=1'), pki, {
      protocols: ['v4.channel.k8s.io'],
      streams: ['error', 'stdout'],
    }),
  );
} finally {
  await kubelet.stop();
  rmSync(dir, { recursive: true, force: true });
}

// 3. through containerd.
{
  const cdir = mkdtempSync(join(tmpdir(), 'tsk-bench-exec-ctrd-'));
  const cmanifests = join(cdir, 'manifests');
  mkdirSync(cmanifests);
  writeFileSync(
    join(cmanifests, 'shell.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'shell' },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
      },
    }),
  );
  const ctrd = await startContainerd();
  const cports = await freeKubeletPorts();
  const k = startKubelet(
    kubeletArgs({
      dir: cdir,
      ports: cports,
      node: 'bench',
      manifests: cmanifests,
      extra: ['--container-runtime-endpoint', ctrd.endpoint],
    }),
  );
  const cpki = {
    ca: join(cdir, 'root', 'pki', 'ca.crt'),
    cert: join(cdir, 'root', 'pki', 'admin.crt'),
    key: join(cdir, 'root', 'pki', 'admin.key'),
  };
  try {
    await until(
      async () =>
        JSON.parse((await httpGet(`http://127.0.0.1:${cports.ro}/pods`)).body).items[0]?.status?.phase === 'Running',
      60_000,
      'pod Running',
    );
    const MIB_CTRD = 200;
    const bigCtrd = ['head', '-c', String(MIB_CTRD << 20), '/dev/zero'];
    const cri = createCriClient(ctrd.endpoint);
    const ctr = (await cri.runtime.listContainers()).find(
      (c) => c.metadata.name === 'main' && c.state === 'CONTAINER_RUNNING',
    )!;
    const ROUNDS_CTRD = Number(process.env.BENCH_EXEC_CTRD_ROUNDS ?? 5);
    const rate = (r: { bytes: number; seconds: number }, what: string) => {
      if (r.bytes !== MIB_CTRD << 20) throw new Error(`${what}: got ${r.bytes} bytes`);
      return r.bytes / 2 ** 20 / r.seconds;
    };
    /**
     * Rounds alternate between the relay and the physical limit (the same exec straight to
     * containerd's streaming server: CRI Exec → its URL, no kubelet, same client), so that both
     * see the same containerd: its streaming rate moves by tens of percent from day to day here.
     * The ratio is the median of each round's pair; the kubelet's CPU is per relayed 200 MiB.
     */
    const alternate = async (
      name: string,
      viaKubelet: () => Promise<{ bytes: number; seconds: number; firstMs?: number }>,
      direct: () => Promise<{ bytes: number; seconds: number; firstMs?: number }>,
    ) => {
      const relayed: number[] = [];
      const straight: number[] = [];
      const firsts: number[] = [];
      const directFirsts: number[] = [];
      const cpu: number[] = [];
      for (let r = 0; r < ROUNDS_CTRD; r++) {
        const cpu0 = sampleProcess(k.proc.pid!).cpuSeconds;
        const a = await viaKubelet();
        cpu.push(sampleProcess(k.proc.pid!).cpuSeconds - cpu0);
        relayed.push(rate(a, name));
        if (a.firstMs !== undefined) firsts.push(a.firstMs);
        const b = await direct();
        straight.push(rate(b, `${name}, direct`));
        if (b.firstMs !== undefined) directFirsts.push(b.firstMs);
      }
      results[`containerd exec ${name} 200 MiB`] = {
        rounds: relayed.length,
        MiBps: round(percentile(relayed, 50)),
        ...(firsts.length ? { firstByteMs: round(percentile(firsts, 50)) } : {}),
        ratio: round(
          percentile(
            relayed.map((x, i) => x / straight[i]),
            50,
          ),
        ),
        kubeletCpuS: round(percentile(cpu, 50)),
      };
      results[`containerd exec ${name} 200 MiB, direct to containerd (no kubelet)`] = {
        rounds: straight.length,
        MiBps: round(percentile(straight, 50)),
        ...(directFirsts.length ? { firstByteMs: round(percentile(directFirsts, 50)) } : {}),
      };
    };
    await alternate(
      'ws v4',
      () => countStdout(`wss://127.0.0.1:${cports.port}${path(bigCtrd, 'output=1')}`, 'v4.channel.k8s.io', tlsOf(cpki)),
      async () =>
        countStdout(
          (await cri.runtime.exec({ container_id: ctr.id, cmd: bigCtrd, stdout: true })).replace(/^http/, 'ws'),
          'v4.channel.k8s.io',
        ),
    );
    // The same with a client that keeps each message (the `ws` package as a program uses it): its own CPU competes
    // with the relay's on two cores.
    await alternate(
      'ws v4, a client keeping each message',
      () =>
        countStdout(`wss://127.0.0.1:${cports.port}${path(bigCtrd, 'output=1')}`, 'v4.channel.k8s.io', tlsOf(cpki), {
          keep: true,
        }),
      async () =>
        countStdout(
          (await cri.runtime.exec({ container_id: ctr.id, cmd: bigCtrd, stdout: true })).replace(/^http/, 'ws'),
          'v4.channel.k8s.io',
          undefined,
          { keep: true },
        ),
    );
    // SPDY, as the apiserver speaks to the kubelet (it translates kubectl's WebSocket into SPDY):
    // through 10250, and straight to containerd's URL, with our SPDY client counting.
    await alternate(
      'spdy v4',
      () => countSpdyStdout(cports.port, path(bigCtrd, 'output=1'), cpki),
      async () => {
        const url = new URL(await cri.runtime.exec({ container_id: ctr.id, cmd: bigCtrd, stdout: true }));
        return countSpdyStdout(Number(url.port), `${url.pathname}${url.search}`);
      },
    );
    cri.close?.();
  } finally {
    await k.stop();
    await ctrd.stop();
    rmSync(cdir, { recursive: true, force: true });
  }
}
report('exec', results);
