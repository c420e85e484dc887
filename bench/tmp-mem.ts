// N static pods on a private containerd; RSS and CPU of the kubelet at intervals; optional strace -c over the idle window.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, untilServing } from '../test/e2e/helpers.js';
import { startContainerd, TEST_IMAGES } from '../test/fixtures/containerd.js';
import { sampleProcess } from './lib.js';
const N = Number(process.env.N ?? 100);
const T = Number(process.env.T ?? 90);
const dir = mkdtempSync(join(tmpdir(), 'tsk-mem-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ctrd = await startContainerd();
const ports = await freeKubeletPorts();
const k = startKubelet(
  kubeletArgs({ dir: join(dir, 'k'), ports, node: 'mem', manifests, extra: ['--container-runtime-endpoint', ctrd.endpoint, '--max-pods', String(N + 10)] }),
);
const pid = k.proc.pid!;
if (process.env.RENICE) spawn('renice', ['-n', '-15', '-p', String(pid)], { stdio: 'ignore' });
try {
  await untilServing(ports);
  await sleep(3000);
  console.log('no pods rss MiB', (sampleProcess(pid).rss / 2 ** 20).toFixed(1));
  const pf = process.env.PERF ? spawn('perf', ['record', '-F', '499', '-g', '-o', '/tmp/perf.data', '-p', String(pid)], { stdio: 'ignore' }) : undefined;
  if (pf) await sleep(1000);
  const cs = sampleProcess(pid).cpuSeconds;
  const t0 = performance.now();
  for (let i = 0; i < N; i++)
    writeFileSync(
      join(manifests, `p${i}.json`),
      JSON.stringify({
        metadata: { name: `p${i}`, namespace: 'default' },
        spec: { hostNetwork: true, terminationGracePeriodSeconds: 2, containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] },
      }),
    );
  for (;;) {
    const items = JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items;
    if (items.filter((p: any) => p.status?.phase === 'Running').length === N) break;
    await sleep(Number(process.env.POLL ?? 50));
  }
  console.log('start s', ((performance.now() - t0) / 1000).toFixed(2), 'kubelet cpu s', (sampleProcess(pid).cpuSeconds - cs).toFixed(2));
  if (pf) {
    pf.kill('SIGINT');
    await new Promise((r) => pf.once('exit', r));
  }
  const threads = (await import('node:fs')).readdirSync(`/proc/${pid}/task`).map((t) => {
    const f = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    const name = f.slice(f.indexOf('(') + 1, f.indexOf(')'));
    const x = f.split(') ')[1].split(' ');
    return `${name}:${(Number(x[11]) + Number(x[12])) / 100}`;
  });
  console.log('threads cpu s', threads.join(' '));
  const s0 = sampleProcess(pid);
  let st: ReturnType<typeof spawn> | undefined;
  let c30 = 0;
  let m30 = '';
  for (let t = 5; t <= T; t += 5) {
    await sleep(5000);
    const s = sampleProcess(pid);
    if (t === 30 && process.env.ALLOC) {
      const m = /ws:\/\/[^\s]+/.exec(k.output());
      const { WebSocket } = await import('ws');
      const ws = new WebSocket(m![0]);
      await new Promise((r) => ws.once('open', r));
      let id = 0;
      const pending = new Map<number, (v: any) => void>();
      ws.on('message', (d) => { const msg = JSON.parse(String(d)); if (msg.id) pending.get(msg.id)?.(msg.result); });
      const send = (method: string, params: object = {}) => new Promise<any>((r) => { const i = ++id; pending.set(i, r); ws.send(JSON.stringify({ id: i, method, params })); });
      await send('HeapProfiler.enable');
      await send('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      await sleep(Number(process.env.ALLOC) * 1000);
      const { profile } = await send('HeapProfiler.stopSampling');
      writeFileSync('/tmp/alloc.json', JSON.stringify(profile));
      ws.close();
      console.log('alloc profile written');
    }
    if (t === 30) {
      m30 = (await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body;
      c30 = s.cpuSeconds;
      if (process.env.STRACE) st = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'inherit', 'inherit'] });
    }
    console.log(`t+${t} rss ${(s.rss / 2 ** 20).toFixed(1)} MiB cpu ${(s.cpuSeconds - s0.cpuSeconds).toFixed(2)} s`);
  }
  {
    const m90 = (await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body;
    const parse = (m: string) =>
      new Map(
        m
          .split('\n')
          .filter(
            (l) =>
              l.startsWith('kubelet_runtime_operations_total{') ||
              l.startsWith('kubelet_pod_worker_duration_seconds_count') ||
              l.startsWith('kubelet_pleg_relist_duration_seconds_count'),
          )
          .map((l) => [l.split(' ')[0], Number(l.split(' ')[1])]),
      );
    const a = parse(m30),
      b = parse(m90);
    for (const [k, v] of b) console.log('ops', k, v - (a.get(k) ?? 0));
  }
  if (st) {
    st.kill('SIGINT');
    await new Promise((r) => st!.once('exit', r));
  }
  console.log(`steady idle cpu ${(((sampleProcess(pid).cpuSeconds - c30) / (T - 30)) * 100).toFixed(2)} %`);
} finally {
  writeFileSync('/tmp/kout.txt', k.output());
  await k.stop();
  await ctrd.stop();
  rmSync(dir, { recursive: true, force: true });
}
