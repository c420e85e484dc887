/**
 * The real kubectl against our kubelet, through an apiserver double that passes pod-subresource
 * upgrades through byte-for-byte: exec, exec -it (in a pty), attach — each over WebSocket (kubectl's
 * default, v5) and over SPDY (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodList } from '../../src/api/types.js';
import { createCa, issueCert } from '../../src/server/pki.js';
import { startKubectlApiserver, type KubectlApiserver } from '../fixtures/kubectl-apiserver.js';
import {
  freeKubeletPorts,
  freePort,
  httpGet,
  kubeletArgs,
  listenedPort,
  listeningPodCommand,
  startKubelet,
  until,
  type Kubelet,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-kubectl-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
const node = 'kubectl-node';
let kubelet: Kubelet;
let api: KubectlApiserver;
let kubeconfig: string;
let webPort: number;

function kubectl(
  args: string[],
  o: { spdy: boolean; input?: string; killWhen?: RegExp },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = {
      ...process.env,
      KUBECONFIG: kubeconfig,
      KUBECTL_REMOTE_COMMAND_WEBSOCKETS: o.spdy ? 'false' : 'true',
      KUBECTL_PORT_FORWARD_WEBSOCKETS: o.spdy ? 'false' : 'true',
    };
    const p = spawn('kubectl', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
    p.stdout.on('data', (d) => {
      stdout += d;
      if (o.killWhen?.test(stdout)) p.kill('SIGTERM');
    });
    p.stderr.on('data', (d) => (stderr += d));
    if (o.input !== undefined) p.stdin.write(o.input);
    p.stdin.end();
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  await new Promise<void>((resolve, reject) =>
    execFile('kubectl', ['version', '--client'], (err) =>
      err ? reject(new Error('kubectl is required for these tests (it is installed on the CI machines)')) : resolve(),
    ),
  );
  const ports = await freeKubeletPorts();
  writeFileSync(
    join(manifests, 'shell.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: shell}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
  );
  writeFileSync(
    join(manifests, 'cat.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: cat}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sh, -c, "while read l; do echo \\"got $l\\"; done"], stdin: true}\n',
  );
  writeFileSync(
    join(manifests, 'web.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: node, command: ${listeningPodCommand("require('http').createServer((q, r) => r.end('hello from web ' + q.url))", join(dir, 'web.port'))}}\n`,
  );
  kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests }));
  const readOnlyUrl = `http://127.0.0.1:${ports.ro}/pods`;
  await until(
    async () => {
      const items = (JSON.parse((await httpGet(readOnlyUrl)).body) as PodList).items;
      return items.length === 3 && items.every((p) => p.status?.phase === 'Running');
    },
    20_000,
    'pods Running',
  );
  webPort = await listenedPort(join(dir, 'web.port'));
  const apiCa = await createCa('apiserver-ca');
  const pki = (f: string) => readFileSync(join(root, 'pki', f));
  api = await startKubectlApiserver({
    serving: await issueCert(apiCa, {
      cn: 'apiserver',
      server: true,
      sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
    }),
    kubelet: { port: ports.port, ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') },
    readOnlyUrl,
  });
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters: [{name: t, cluster: {server: "${api.url}", certificate-authority-data: ${Buffer.from(apiCa.cert).toString('base64')}}}]\nusers: [{name: t, user: {token: test}}]\ncontexts: [{name: t, context: {cluster: t, user: t, namespace: default}}]\n`,
  );
}, 40_000);

afterAll(async () => {
  await api?.close();
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

for (const spdy of [false, true]) {
  const via = spdy ? 'SPDY/3.1' : 'websocket';
  describe(`kubectl over ${via}`, () => {
    it('exec: output and the remote exit code', async () => {
      api.upgrades.length = 0;
      const r = await kubectl(
        ['exec', `shell-${node}`, '--', 'sh', '-c', 'echo hello from $0; echo to-stderr >&2; exit 3'],
        { spdy },
      );
      expect(r.stdout).toBe('hello from sh\n');
      expect(r.stderr).toContain('to-stderr');
      expect(r.code).toBe(3);
      expect(api.upgrades[0]).toMatch(
        new RegExp(`^${via} /exec/default/shell-${node}/main\\?command=sh&command=-c&.*output=1&error=1`, 'i'),
      );
    });

    it('exec -i: stdin reaches the command', async () => {
      const r = await kubectl(['exec', '-i', `shell-${node}`, '--', 'sh', '-c', 'tr a-z A-Z'], {
        spdy,
        input: 'shout this\n',
      });
      expect(r.stdout).toBe('SHOUT THIS\n');
      expect(r.code).toBe(0);
    });

    it('exec -it in a pty: an interactive shell', async () => {
      const pty = await import('node-pty');
      const env = {
        ...process.env,
        KUBECONFIG: kubeconfig,
        KUBECTL_REMOTE_COMMAND_WEBSOCKETS: spdy ? 'false' : 'true',
      } as Record<string, string>;
      const term = pty.spawn('kubectl', ['exec', '-it', `shell-${node}`, '--', 'sh'], { cols: 100, rows: 30, env });
      let out = '';
      term.onData((d) => (out += d));
      const exit = new Promise<number>((r) => term.onExit(({ exitCode }) => r(exitCode)));
      await until(() => /[#$] $/.test(out), 10_000, 'a prompt');
      term.write('echo hi-$((40+2)); stty size\r');
      await until(() => out.includes('hi-42') && /30 100/.test(out), 10_000, 'command output and the terminal size');
      term.write('exit 7\r');
      expect(await exit).toBe(7);
    });

    it('port-forward: curl through the forwarded port, then an error for a closed port', async () => {
      const local = await freePort();
      const env = { ...process.env, KUBECONFIG: kubeconfig, KUBECTL_PORT_FORWARD_WEBSOCKETS: spdy ? 'false' : 'true' };
      const pf = spawn('kubectl', ['port-forward', `pod/web-${node}`, `${local}:${webPort}`], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      pf.stdout.on('data', (d) => (out += d));
      pf.stderr.on('data', (d) => (out += d));
      try {
        await until(
          () => out.includes(`Forwarding from 127.0.0.1:${local} -> ${webPort}`),
          10_000,
          'kubectl port-forward ready',
        );
        for (let i = 0; i < 3; i++)
          expect((await httpGet(`http://127.0.0.1:${local}/try-${i}`)).body).toBe(`hello from web /try-${i}`);
        expect(
          api.upgrades.some((u) => u.startsWith(spdy ? 'SPDY/3.1 /portForward/' : 'websocket /portForward/')),
        ).toBe(true);
        // Over the WebSocket tunnel itself: kubectl falls back to SPDY when the tunnel is refused
        // (regression: `ws` refused the tunnel's subprotocol, which is not an RFC 7230 token).
        if (!spdy) expect(api.upgrades.filter((u) => u.startsWith('SPDY/3.1 /portForward/'))).toEqual([]);
      } finally {
        pf.kill('SIGTERM');
      }
      const closed = await freePort();
      const local2 = await freePort();
      const pf2 = spawn('kubectl', ['port-forward', `pod/web-${node}`, `${local2}:${closed}`], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out2 = '';
      pf2.stdout.on('data', (d) => (out2 += d));
      pf2.stderr.on('data', (d) => (out2 += d));
      try {
        await until(() => out2.includes('Forwarding from'), 10_000, 'second port-forward ready');
        await httpGet(`http://127.0.0.1:${local2}/`).catch(() => undefined);
        await until(
          () => out2.includes(`error forwarding port ${closed}`),
          10_000,
          'the dial error reported by kubectl',
        );
        expect(out2).toMatch(/connect ECONNREFUSED|connection refused/);
      } finally {
        pf2.kill('SIGTERM');
      }
    });

    it('attach -i: joins the running container', async () => {
      const r = await kubectl(['attach', '-i', `cat-${node}`, '-c', 'main'], {
        spdy,
        input: `hello ${via}\n`,
        killWhen: new RegExp(`got hello ${via.replace('/', '\\/')}`),
      });
      expect(r.stdout).toContain(`got hello ${via}`);
    });
  });
}
