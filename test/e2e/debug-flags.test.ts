/**
 * PUT /debug/flags/v on a running kubelet (process runtime, standalone): the body sets the log
 * verbosity at once, as upstream's handler does — the kubelet's debug lines (its events) appear only
 * after it — with upstream's plain-text answers for a bad level and another method; with
 * enableDebugFlagsHandler off the path answers 405.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import https from 'node:https';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { debugFlagsRoutes, parseVerbosity } from '../../src/routes/debug-flags.js';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-debug-flags-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
let kubelet: Kubelet;
let ports: KubeletPorts;
const pki = () => ({
  ca: readFileSync(join(dir, 'root', 'pki', 'ca.crt')),
  cert: readFileSync(join(dir, 'root', 'pki', 'admin.crt')),
  key: readFileSync(join(dir, 'root', 'pki', 'admin.key')),
});

/** A request to 10250 with the admin certificate; `body` sent as curl -d sends it (a form content type). */
function request(method: string, body?: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: ports.port,
        path: '/debug/flags/v',
        method,
        ...pki(),
        headers: body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' },
      },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body: b }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const running = async (name: string) =>
  (
    JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items as {
      metadata: { name: string };
      status?: { phase?: string };
    }[]
  ).some((p) => p.metadata.name === name && p.status?.phase === 'Running');
const writePod = (name: string, env: { name: string; value: string }[] = []) =>
  writeFileSync(
    join(manifests, `${name}.json`),
    JSON.stringify({
      metadata: { name, namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            env,
            volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        ],
        volumes: [{ name: 'scratch', emptyDir: {} }],
      },
    }),
  );

beforeAll(async () => {
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletArgs({ dir, ports, node: 'flags', manifests }));
  await untilServing(ports, kubelet);
}, 30_000);
afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('/debug/flags/v', () => {
  it('PUT sets the verbosity at once: debug lines appear only after it', async () => {
    writePod('quiet');
    await until(() => running('quiet-flags'), 20_000, 'quiet running');
    // Events are logged at V(3), as upstream's "Event occurred" lines: none at --v=0, nor upstream's V(1) volume line.
    expect(kubelet.output()).not.toMatch(/ reason="Started"/);
    expect(kubelet.output()).not.toContain('MountVolume.SetUp succeeded');
    // --v=1: the V(1) volume line, as upstream's (the unique name is the plugin's, the pod's UID and the volume's), but
    // no V(2) line.
    expect((await request('PUT', '1')).status).toBe(200);
    writePod('one');
    await until(() => running('one-flags'), 20_000, 'one running');
    const mounted = await until(
      () =>
        kubelet
          .output()
          .split('\n')
          .find((l) => l.includes('MountVolume.SetUp succeeded') && l.includes('one-flags')),
      10_000,
      'V(1) line',
    );
    expect(mounted).toMatch(
      /\] "MountVolume\.SetUp succeeded for volume \\"scratch\\" \(UniqueName: \\"kubernetes\.io\/empty-dir\/([0-9a-f-]+)-scratch\\"\) pod \\"one-flags\\" \(UID: \\"\1\\"\) " pod="default\/one-flags"$/,
    );
    expect(kubelet.output()).not.toContain('pods=["default/one-flags"]');
    const r = await request('PUT', '4');
    expect(r).toEqual({
      status: 200,
      type: 'text/plain; charset=utf-8',
      body: 'successfully set klog.logging.verbosity to 4\n',
    });
    writePod('loud');
    await until(
      () =>
        /\] "Event occurred" object="default\/loud-flags" fieldPath="spec\.containers\{[a-z]+\}" kind="Pod" apiVersion="v1" type="Normal" reason="Started"/.test(
          kubelet.output(),
        ),
      20_000,
      'debug event lines',
    );
    // Upstream's V(2) line for the new pod.
    expect(kubelet.output()).toContain('] "SyncLoop ADD" source="file" pods=["default/loud-flags"]');
    expect(kubelet.output()).not.toContain('pods=["default/quiet-flags"]');
    expect(kubelet.output()).toContain(
      '] "No sandbox for pod can be found. Need to start a new one" pod="default/loud-flags"',
    );
    // The CRI call log is V(10): not at 4.
    expect(kubelet.output()).not.toContain('[RemoteRuntimeService]');
    expect((await request('PUT', '10')).status).toBe(200);
    writePod('traced', [{ name: 'TOKEN', value: 'hunter2-never-logged' }]);
    await until(() => running('traced-flags'), 20_000, 'traced running');
    // The log reaches the output a moment after the pod shows Running: each line is waited for.
    const line = (re: RegExp, what: string) =>
      until(
        () =>
          kubelet
            .output()
            .split('\n')
            .find((l) => re.test(l)),
        10_000,
        what,
      );
    // Each call going out and coming back, with its ids and duration, as upstream's cri-client at V(10).
    await line(
      /remote_runtime:0\] "\[RemoteRuntimeService\] RunPodSandbox" pod="default\/traced-flags" podUID="[0-9a-f-]+" attempt=0 runtimeHandler=""$/,
      'RunPodSandbox',
    );
    const sandbox = /podSandboxID="([^"]+)" duration="[0-9.]+(µs|ms|s)"$/.exec(
      await line(/"\[RemoteRuntimeService\] RunPodSandbox Response" pod="default\/traced-flags" /, 'its response'),
    )?.[1];
    expect(sandbox).toBeTruthy();
    const created = await line(
      new RegExp(
        `"\\[RemoteRuntimeService\\] CreateContainer Response" podSandboxID="${sandbox}" container="main" attempt=0 containerID="([^"]+)" duration=`,
      ),
      'CreateContainer Response',
    );
    const container = /containerID="([^"]+)"/.exec(created)?.[1];
    expect(container).toBeTruthy();
    await line(
      new RegExp(`"\\[RemoteRuntimeService\\] StartContainer Response" containerID="${container}" duration=`),
      'StartContainer Response',
    );
    await line(/"\[RemoteImageService\] ImageStatus" image="busybox"/, 'ImageStatus');
    // The configuration (its environment) is never logged, unlike upstream's.
    expect(kubelet.output()).not.toContain('hunter2-never-logged');
    // Back to 0: quiet again.
    expect((await request('PUT', '0')).status).toBe(200);
  }, 60_000);

  it("answers upstream's plain text for a level that is not an int32 and for another method", async () => {
    expect(await request('PUT', '4\n')).toMatchObject({
      status: 400,
      body: 'failed set klog.logging.verbosity 4\n: strconv.ParseInt: parsing "4\\n": invalid syntax\n',
    });
    expect((await request('PUT', '99999999999')).body).toBe(
      'failed set klog.logging.verbosity 99999999999: strconv.ParseInt: parsing "99999999999": value out of range\n',
    );
    expect(await request('GET')).toMatchObject({ status: 406, body: 'unsupported http method\n' });
    expect((await request('PUT', 'x'.repeat(4096))).status).toBe(413);
  });

  it('parses as strconv.ParseInt(s, 10, 32) does; disabled, every method answers 405', async () => {
    expect([
      parseVerbosity('+3'),
      parseVerbosity('-1'),
      parseVerbosity(' 3').ok,
      parseVerbosity('').ok,
      parseVerbosity('0x3').ok,
    ]).toEqual([{ ok: true, level: 3 }, { ok: true, level: -1 }, false, false, false]);
    const app = Fastify();
    await app.register(debugFlagsRoutes, { enabled: false, setVerbosity: () => {} });
    for (const method of ['PUT', 'GET'] as const) {
      const r = await app.inject({ method, url: '/debug/flags/v', payload: method === 'PUT' ? '4' : undefined });
      expect([r.statusCode, r.body]).toEqual([405, 'flags endpoint is disabled.\n']);
    }
    await app.close();
  });
});
