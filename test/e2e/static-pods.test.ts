/**
 * End to end: the real CLI with the embedded process runtime, real processes, real TLS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { findCgroupDir } from '../fixtures/cgroup-tree.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostCgroupVersion } from '../../src/agent/node-setup/cgroup-version.js';
import { kernelDefaultsErrors } from '../../src/agent/node-setup/kernel-tunables.js';
import type { Pod, PodList } from '../../src/api/types.js';
import { OFF_THREAD_BYTES } from '../../src/agent/podconfig/decode-off-thread.js';
import {
  countProcesses,
  freeKubeletPorts,
  httpGet,
  httpsGet,
  kubeletArgs,
  runKubelet,
  startKubelet,
  until,
  type Kubelet,
} from './helpers.js';

const tag = `e2e${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'tsk-e2e-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
let ports: { port: number; ro: number; hz: number };
let kubelet: Kubelet;
const node = 'e2e-node';

const loopPod = (name: string, marker: string, extra = '') => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "trap 'echo got TERM; exit 0' TERM; i=0; while true; do echo ${marker} line $i ${extra}; i=$((i+1)); sleep 0.2; done"]
`;

async function pods(): Promise<Pod[]> {
  const r = await httpGet(`http://127.0.0.1:${ports.ro}/pods`);
  return (JSON.parse(r.body) as PodList).items;
}
const podNamed = async (n: string) => (await pods()).find((p) => p.metadata.name === `${n}-${node}`);
const pki = () => ({
  ca: join(root, 'pki', 'ca.crt'),
  cert: join(root, 'pki', 'admin.crt'),
  key: join(root, 'pki', 'admin.key'),
});
const args = () =>
  kubeletArgs({
    dir,
    ports,
    node,
    manifests,
    extra: ['--node-ip', '127.0.0.1', '--file-check-frequency', '1s', '--feature-gates=PodLogsQuerySplitStreams=true'],
  });

beforeAll(async () => {
  ports = await freeKubeletPorts();
  writeFileSync(join(manifests, 'loop.yaml'), loopPod('loop', `${tag}-loop`));
  writeFileSync(
    join(manifests, 'crash.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: crash}\nspec:\n  containers:\n  - {name: c, image: busybox, command: ["sh", "-c", "echo crashing; exit 3"]}\n`,
  );
  writeFileSync(
    join(manifests, 'streams.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: streams}\nspec:\n  containers:\n  - {name: c, image: busybox, command: ["sh", "-c", "echo out; echo err >&2; sleep 3600"]}\n`,
  );
  writeFileSync(
    join(manifests, 'broken.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec: {containers: [{name: c}]}\n',
  );
  // A static pod runs without the apiserver: one that names a secret is refused (PreventStaticPodAPIReferences).
  writeFileSync(
    join(manifests, 'secretive.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: secretive}\nspec:\n  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]\n  volumes: [{name: s, secret: {secretName: token}}]\n',
  );
  writeFileSync(join(manifests, '.hidden.yaml'), loopPod('hidden', `${tag}-hidden`));
  // Longer than OFF_THREAD_BYTES: decoded in a worker thread (dist/decode-worker.js).
  writeFileSync(
    join(manifests, 'long.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: long\n  annotations: {note: "${'n'.repeat(OFF_THREAD_BYTES)}"}\nspec:\n  containers:\n  - {name: c, image: busybox, command: [sleep, "3600"]}\n`,
  );
  kubelet = startKubelet(args());
  await until(async () => (await podNamed('loop'))?.status?.phase === 'Running', 20_000, 'loop pod Running');
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('static pods on the process runtime', () => {
  it.runIf(process.getuid?.() === 0)(
    "enforces the container's limits in its cgroup: over its memory limit it is OOMKilled (137), its CPU quota is written",
    async () => {
      writeFileSync(
        join(manifests, 'limits.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: limits}
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: busybox
    command: ["sh", "-c", "a=x; while true; do a=\\"$a$a\\"; done"]
    resources: {limits: {memory: 24Mi, cpu: 500m}}
  - name: calm
    image: busybox
    command: ["sleep", "3600"]
    resources: {limits: {memory: 24Mi, cpu: 250m}}
`,
      );
      const hog = await until(
        async () =>
          (await podNamed('limits'))?.status?.containerStatuses?.find((c) => c.name === 'hog')?.state.terminated,
        20_000,
        'hog ended',
      );
      expect([hog.reason, hog.exitCode]).toEqual(['OOMKilled', 137]);
      const calm = (await podNamed('limits'))!.status!.containerStatuses!.find((c) => c.name === 'calm')!;
      const id = calm.containerID!.replace('process://', '');
      // <runtime key>/<sandbox id>/<container id>
      const cgroupDir = findCgroupDir('/sys/fs/cgroup/cpu/tskubelet-process-runtime', id, 3);
      expect(readFileSync(join(cgroupDir, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('25000');
      rmSync(join(manifests, 'limits.yaml'));
    },
  );

  it('lists static pods Running on the read-only port with upstream status fields', async () => {
    const p = (await podNamed('loop'))!;
    expect(p.metadata.annotations).toMatchObject({
      'kubernetes.io/config.source': 'file',
      'kubernetes.io/config.hash': p.metadata.uid,
    });
    expect(p.spec.nodeName).toBe(node);
    const cs = p.status!.containerStatuses![0];
    expect(cs).toMatchObject({ name: 'main', ready: true, started: true, restartCount: 0 });
    expect(cs.state.running?.startedAt).toMatch(/Z$/);
    expect(cs.containerID).toMatch(/^process:\/\/[0-9a-f]{64}$/);
    expect(p.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('True');
    expect(p.status!.podIP).toBe('127.0.0.1');
    expect(countProcesses(`${tag}-loop`)).toBe(1);
  });

  it('runs a pod whose manifest is long enough to be decoded in a worker thread', async () => {
    const p = await until(
      async () => {
        const x = await podNamed('long');
        return x?.status?.phase === 'Running' ? x : undefined;
      },
      10_000,
      'long pod Running',
    );
    expect(p.metadata.annotations!.note).toHaveLength(OFF_THREAD_BYTES);
  });

  it('reports a broken manifest with its file and keeps the others running; hidden files are ignored', async () => {
    expect(kubelet.output()).toMatch(/broken\.yaml.*spec\.containers\.0\.image/);
    expect(await podNamed('broken')).toBeUndefined();
    expect(kubelet.output()).toContain('secretive.yaml: static pods may not reference secrets');
    expect(await podNamed('secretive')).toBeUndefined();
    expect(await podNamed('hidden')).toBeUndefined();
  });

  it('answers 401 on 10250 without a client certificate, 200 with the admin certificate', async () => {
    const { ca } = pki();
    expect((await httpsGet(`https://127.0.0.1:${ports.port}/pods`, { ca })).status).toBe(401);
    const ok = await httpsGet(`https://127.0.0.1:${ports.port}/pods`, pki());
    expect(ok.status).toBe(200);
    expect((JSON.parse(ok.body) as PodList).items.map((p) => p.metadata.name)).toContain(`loop-${node}`);
  });

  it('serves container logs over 10250 with tailLines, timestamps and limitBytes', async () => {
    const base = `https://127.0.0.1:${ports.port}/containerLogs/default/loop-${node}/main`;
    await until(async () => (await httpsGet(`${base}`, pki())).body.split('\n').length > 4, 10_000, 'some log lines');
    const tail = await httpsGet(`${base}?tailLines=2`, pki());
    expect(tail.status).toBe(200);
    const lines = tail.body.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^${tag}-loop line \\d+`));
    const ts = await httpsGet(`${base}?tailLines=1&timestamps=true`, pki());
    expect(ts.body).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z ${tag}-loop line`));
    expect((await httpsGet(`${base}?limitBytes=5`, pki())).body).toBe(`${tag}`.slice(0, 5));
  });

  it("exec and ExecSync in a container take its QoS class's OOM score, not the kubelet's", async () => {
    const r = await httpsGet(
      `https://127.0.0.1:${ports.port}/run/default/loop-${node}/main?cmd=cat%20/proc/self/oom_score_adj`,
      { ...pki(), method: 'POST' },
    );
    expect([r.status, r.body.trim()]).toEqual([200, '1000']);
  });
  it('POST /checkpoint: upstream codes and messages; the embedded runtime cannot checkpoint (500 naming the container)', async () => {
    const post = (p: string) =>
      httpsGet(`https://127.0.0.1:${ports.port}/checkpoint/${p}`, { ...pki(), method: 'POST' });
    const cases: [string, number, string][] = [
      [`default/nope-${node}/main`, 404, 'pod does not exist'],
      [`default/loop-${node}/nope`, 404, 'container nope does not exist'],
      [`default/loop-${node}/main?timeout=soon`, 404, 'cannot parse value of timeout parameter'],
      [
        `default/loop-${node}/main?timeout=5`,
        500,
        `checkpointing of default/loop-${node}/main failed (the container runtime cannot checkpoint containers)`,
      ],
    ];
    for (const [p, code, message] of cases) {
      const r = await post(p);
      expect([r.status, JSON.parse(r.body)], p).toMatchObject([code, { kind: 'Status', code, message }]);
    }
    // Not on the read-only port, and never without credentials.
    expect(
      (
        await httpsGet(`https://127.0.0.1:${ports.port}/checkpoint/default/loop-${node}/main`, {
          ca: pki().ca,
          method: 'POST',
        })
      ).status,
    ).toBe(401);
  });
  it('answers log errors with Status JSON and the upstream codes', async () => {
    const url = (p: string) => `https://127.0.0.1:${ports.port}/containerLogs/${p}`;
    const cases: [string, number, string][] = [
      [`default/nope-${node}/main`, 404, 'NotFound'],
      [`default/loop-${node}/nope`, 404, 'NotFound'],
      [`default/loop-${node}/main?tailLines=abc`, 400, 'BadRequest'],
      [`default/loop-${node}/main?limitBytes=0`, 422, 'Invalid'],
      [`default/loop-${node}/main?sinceSeconds=1&sinceTime=2024-01-01T00:00:00Z`, 422, 'Invalid'],
      [`default/..%2F..%2Fetc/main`, 400, 'BadRequest'],
    ];
    for (const [p, code, reason] of cases) {
      const r = await httpsGet(url(p), pki());
      expect(r.status, p).toBe(code);
      expect(JSON.parse(r.body), p).toMatchObject({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        code,
        reason,
      });
    }
  });

  it('shows CrashLoopBackOff with growing delays for a container that exits non-zero', async () => {
    const p = await until(
      async () => {
        const x = await podNamed('crash');
        const s = x?.status?.containerStatuses?.[0];
        return s?.state.waiting?.reason === 'CrashLoopBackOff' && s.restartCount >= 2 ? x : undefined;
      },
      25_000,
      'CrashLoopBackOff',
    );
    const s = p.status!.containerStatuses![0];
    // The first crash is restarted at once; each next one waits twice as long (10 s, 20 s, …): the delay follows the
    // restart count the status shows with it (a slow machine may first be seen past the second restart).
    const delay = Math.min(10 * 2 ** (s.restartCount - 1), 300);
    expect(s.state.waiting!.message).toMatch(
      new RegExp(
        `^back-off ${delay === 300 ? '5m0s' : `${delay}s`} restarting failed container=c pod=crash-e2e-node_default\\(`,
      ),
    );
    expect(s.lastState.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(p.status!.phase).toBe('Running');
    const prev = await httpsGet(
      `https://127.0.0.1:${ports.port}/containerLogs/default/crash-${node}/c?previous=true`,
      pki(),
    );
    expect(prev.body).toBe('crashing\n');
  }, 30_000);

  it('/containerLogs picks a stream with PodLogsQuerySplitStreams on, and refuses a stream upstream does not know', async () => {
    const logs = (query: string) =>
      httpsGet(`https://127.0.0.1:${ports.port}/containerLogs/default/streams-${node}/c?${query}`, pki());
    await until(async () => (await logs('stream=All')).body.split('\n').length === 3, 20_000, 'both lines logged');
    expect((await logs('stream=Stdout')).body).toBe('out\n');
    expect((await logs('stream=Stderr')).body).toBe('err\n');
    const refused = await logs('stream=Both');
    expect(refused.status).toBe(422);
    expect(refused.body).toContain('stream: Unsupported value: \\"Both\\"');
  });

  it('restarts a pod with the new spec when its manifest is edited', async () => {
    const before = (await podNamed('loop'))!.metadata.uid;
    writeFileSync(join(manifests, 'loop.yaml'), loopPod('loop', `${tag}-loop`, 'v2'));
    const after = await until(
      async () => {
        const p = await podNamed('loop');
        return p && p.metadata.uid !== before && p.status?.phase === 'Running' ? p : undefined;
      },
      15_000,
      'new loop pod',
    );
    await until(
      async () =>
        (
          await httpsGet(`https://127.0.0.1:${ports.port}/containerLogs/default/loop-${node}/main?tailLines=1`, pki())
        ).body.includes('v2'),
      10_000,
      'v2 output',
    );
    await until(() => countProcesses(`${tag}-loop`) === 1, 10_000, 'one loop process');
    expect(after.metadata.uid).not.toBe(before);
  });

  it("runs one copy at a time when a manifest is edited: the new pod starts once the old one's processes are gone, as upstream", async () => {
    const stubborn = (marker: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata: {name: stubborn}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: main, image: busybox, command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.1; done", "${marker}"]}\n`;
    writeFileSync(join(manifests, 'stubborn.yaml'), stubborn(`${tag}-stubborn-v1`));
    await until(() => countProcesses(`${tag}-stubborn-v1`) > 0, 15_000, 'v1 running');
    writeFileSync(join(manifests, 'stubborn.yaml'), stubborn(`${tag}-stubborn-v2`));
    let overlap = false;
    let sawV1Stopping = false;
    await until(
      () => {
        const v1 = countProcesses(`${tag}-stubborn-v1`);
        const v2 = countProcesses(`${tag}-stubborn-v2`);
        if (v1 && v2) overlap = true;
        if (v1) sawV1Stopping = true;
        return v2 > 0;
      },
      15_000,
      'v2 running',
    );
    expect(sawV1Stopping).toBe(true);
    expect(overlap).toBe(false);
    rmSync(join(manifests, 'stubborn.yaml'));
    await until(() => countProcesses(`${tag}-stubborn`) === 0, 10_000, 'stubborn gone');
  }, 40_000);

  it('runs a pod again, restartCount 1, whose manifest is deleted and written again at once (upstream MirrorPod recreate test)', async () => {
    const manifest = `apiVersion: v1\nkind: Pod\nmetadata: {name: recreated}\nspec:\n  containers:\n  - {name: main, image: busybox, command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done", "${tag}-recreated"]}\n`;
    writeFileSync(join(manifests, 'recreated.yaml'), manifest);
    const first = await until(
      async () => (await podNamed('recreated'))?.status?.phase === 'Running' && (await podNamed('recreated')),
      15_000,
      'recreated Running',
    );
    rmSync(join(manifests, 'recreated.yaml'));
    writeFileSync(join(manifests, 'recreated.yaml'), manifest);
    const again = await until(
      async () => {
        const p = await podNamed('recreated');
        const c = p?.status?.containerStatuses?.[0];
        return c?.restartCount === 1 && c.state.running && p;
      },
      20_000,
      'running again with restartCount 1',
    );
    expect(again.metadata.uid).toBe(first.metadata.uid);
    await until(() => countProcesses(`${tag}-recreated`) === 1, 10_000, 'one copy');
    rmSync(join(manifests, 'recreated.yaml'));
    await until(() => countProcesses(`${tag}-recreated`) === 0, 10_000, 'recreated gone');
  }, 40_000);

  it('runs a pod again whose manifest was removed and put back while it stopped (same UID), counted in kubelet_restarted_pods_total', async () => {
    const manifest = `apiVersion: v1\nkind: Pod\nmetadata: {name: again}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: main, image: busybox, command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.1; done", "${tag}-again"]}\n`;
    const restarted = async () =>
      /^kubelet_restarted_pods_total\{static="true"\} (\d+)$/m.exec(
        (await httpsGet(`https://127.0.0.1:${ports.port}/metrics`, pki())).body,
      )?.[1];
    const before = Number(await restarted());
    writeFileSync(join(manifests, 'again.yaml'), manifest);
    const first = await until(
      async () => (await podNamed('again'))?.status?.phase === 'Running' && (await podNamed('again')),
      15_000,
      'again Running',
    );
    rmSync(join(manifests, 'again.yaml'));
    // Put back while the old copy is still in its grace period (it ignores SIGTERM).
    await until(async () => !(await podNamed('again')), 10_000, 'again removed from /pods');
    writeFileSync(join(manifests, 'again.yaml'), manifest);
    await until(() => countProcesses(`${tag}-again`) === 0, 10_000, 'old copy stopped');
    const second = await until(
      async () => (await podNamed('again'))?.status?.phase === 'Running' && (await podNamed('again')),
      15_000,
      'again Running again',
    );
    expect(second.metadata.uid).toBe(first.metadata.uid);
    await until(() => countProcesses(`${tag}-again`) === 1, 10_000, 'one copy running');
    expect(Number(await restarted())).toBe(before + 1);
    rmSync(join(manifests, 'again.yaml'));
    await until(() => countProcesses(`${tag}-again`) === 0, 10_000, 'again gone');
  }, 40_000);

  it('keeps exactly one set of processes across a kubelet restart', async () => {
    const code = await kubelet.stop();
    expect(code).toBe(0);
    expect(countProcesses(`${tag}-loop`)).toBe(0);
    kubelet = startKubelet(args());
    await until(
      async () => (await podNamed('loop').catch(() => undefined))?.status?.phase === 'Running',
      20_000,
      'loop Running again',
    );
    await new Promise((r) => setTimeout(r, 2500));
    expect(countProcesses(`${tag}-loop`)).toBe(1);
  }, 40_000);

  it('stops a pod within its grace period when its manifest is deleted', async () => {
    rmSync(join(manifests, 'loop.yaml'));
    const t0 = Date.now();
    await until(() => countProcesses(`${tag}-loop`) === 0, 10_000, 'loop processes gone');
    expect(Date.now() - t0).toBeLessThan(3000 + 2000 + 1000);
    await until(async () => !(await podNamed('loop')), 5000, 'pod gone from /pods');
  });

  it('answers healthz on the healthz port', async () => {
    const r = await httpGet(`http://127.0.0.1:${ports.hz}/healthz?verbose`);
    expect(r.status).toBe(200);
    expect(r.body).toContain('[+]syncloop ok');
  });
});

describe('start-up errors', () => {
  it('exits 1 naming the field for an invalid config file', async () => {
    const f = join(dir, 'bad.yaml');
    writeFileSync(f, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequency: often\n');
    const r = await runKubelet(['--config', f]);
    expect(r.code).toBe(1);
    expect(r.output).toContain('"command failed" err="invalid value for field \\"syncFrequency\\"');
  });
  it('with --protect-kernel-defaults, exits 1 naming each kernel setting that differs from what the kubelet needs', async () => {
    const wrong = await kernelDefaultsErrors();
    // Where the kernel already has every setting the kubelet would start; this machine's does not.
    if (!wrong.length) return;
    const r = await runKubelet(['--protect-kernel-defaults', '--root-dir', join(dir, 'protect-root')]);
    expect(r.code).toBe(1);
    expect(r.output).toContain(`failed to run Kubelet: [${wrong.join(', ')}]`);
  });
  it('exits 1 when an image credential provider binary is missing, naming it', async () => {
    const cfg = join(dir, 'cred-providers.yaml');
    writeFileSync(
      cfg,
      'apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- {name: absent, matchImages: ["*.example.com"], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n',
    );
    const r = await runKubelet([
      ...kubeletArgs({ dir: join(dir, 'cred'), ports: await freeKubeletPorts(), node }),
      '--image-credential-provider-config',
      cfg,
      '--image-credential-provider-bin-dir',
      join(dir, 'no-bin'),
    ]);
    expect(r.code).toBe(1);
    expect(r.output).toContain(
      `failed to register CRI auth plugins: error inspecting binary executable \\"${join(dir, 'no-bin', 'absent')}\\"`,
    );
  });
  it('on a cgroup v1 host, exits 1 unless failCgroupV1 is false (the v1.36 default refuses the host)', async () => {
    // A cgroup v2 host would start: this rule is for v1 hosts only.
    if (hostCgroupVersion() === 2) return;
    const r = await runKubelet(['--fail-cgroupv1=true', '--root-dir', join(dir, 'cgroup-v1-root')]);
    expect(r.code).toBe(1);
    expect(r.output).toContain(
      '"command failed" err="failed to validate kubelet configuration, error: kubelet is configured to not run on a host using cgroup v1.',
    );
  });
  it("logs upstream's start lines: the version first, the sources, the sync loop, Started kubelet once serving", async () => {
    const startDir = join(dir, 'start-lines');
    mkdirSync(join(startDir, 'manifests'), { recursive: true });
    const k = startKubelet(
      kubeletArgs({ dir: startDir, ports: await freeKubeletPorts(), node, manifests: join(startDir, 'manifests') }),
    );
    try {
      await until(() => k.output().includes('"Started kubelet"'), 20_000, 'started');
      const output = k.output();
      const order = [
        '"Kubelet version" kubeletVersion="v1.36.2"',
        `"Adding static pod path" path="${join(startDir, 'manifests')}"`,
        '"Starting kubelet main sync loop"',
        '"Started kubelet"',
      ].map((line) => output.indexOf(line));
      expect(order.every((at) => at >= 0)).toBe(true);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    } finally {
      k.proc.kill('SIGKILL');
    }
  });
  it("starts on a config file with a field of a later release, logging upstream's lenient decoding line", async () => {
    const f = join(dir, 'later-release.yaml');
    writeFileSync(
      f,
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\nfailSwapOn: false\n' +
        'authentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\naFieldOfV137: {enabled: true}\n',
    );
    const k = startKubelet([
      ...kubeletArgs({ dir: join(dir, 'later-release'), ports: await freeKubeletPorts(), node }),
      '--config',
      f,
    ]);
    try {
      await until(() => k.output().includes('"Started kubelet"'), 20_000, 'started');
      const output = k.output();
      const lenient =
        '"Using lenient decoding as strict decoding failed" err="strict decoding error: unknown field \\"aFieldOfV137\\""';
      expect(output).toContain(lenient);
      // Decoded before the kubelet runs, as upstream's RunE loads the file before run() logs the version.
      expect(output.indexOf(lenient)).toBeLessThan(output.indexOf('"Kubelet version"'));
    } finally {
      k.proc.kill('SIGKILL');
    }
  });
  it('-h prints the flags and exits 0; an argument that is not a flag is an unknown command', async () => {
    const help = await runKubelet(['-h']);
    expect(help.code).toBe(0);
    expect(help.output).toMatch(/Usage:\n {2}tskubelet \[flags\]/);
    expect(help.output).toMatch(/\n {6}--max-pods int32 +.*\(default 110\)/);
    const command = await runKubelet(['start']);
    expect(command.code).toBe(1);
    expect(command.output).toContain('"command failed" err="unknown command start"');
  });
  it('exits 1 for an unknown flag with the one journal line upstream writes (no usage text)', async () => {
    const r = await runKubelet(['--address', '127.0.0.1', '--definitely-not-a-flag']);
    expect(r.code).toBe(1);
    const lines = r.output.trim().split('\n');
    // pflag's notices for the deprecated flags before the bad one (the helper's --fail-cgroupv1, then --address),
    // then cli.Run's line.
    expect(lines).toHaveLength(3);
    expect(lines[1]).toBe(
      "Flag --address has been deprecated, This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.",
    );
    expect(lines[2]).toMatch(
      /^E\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+\] "command failed" err="failed to parse kubelet flag: unknown flag: --definitely-not-a-flag"$/,
    );
  });
});
