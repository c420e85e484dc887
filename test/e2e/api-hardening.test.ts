/**
 * Node API consistency and the audit trail (issue 13 items 10 and 14): malformed URLs and
 * over-long parameters answer a Kubernetes Status on both ports; plain HTTP on the TLS port gets
 * Go's plain 400; every exec / run is logged with user, pod, container and command, never stdin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import https from 'node:https';
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';
import { wsSession, type ClientPki } from './streaming-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-hard-'));
let k: Kubelet;
let ports: KubeletPorts;
let pki: ClientPki;

function secure(method: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: ports.port,
        method,
        path,
        ca: readFileSync(pki.ca),
        cert: readFileSync(pki.cert),
        key: readFileSync(pki.key),
      },
      (res) => {
        let b = '';
        res.on('data', (d) => {
          b += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  writeFileSync(
    join(manifests, 'p.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: box}\nspec: {containers: [{name: c, image: busybox, command: [sleep, "3600"]}]}\n',
  );
  ports = await freeKubeletPorts();
  // JSON log lines (upstream's --logging-format=json): the audit trail below is read back as objects.
  k = startKubelet(kubeletArgs({ dir, ports, node: 'hard', manifests, extra: ['--logging-format=json'] }));
  pki = {
    ca: join(dir, 'root', 'pki', 'ca.crt'),
    cert: join(dir, 'root', 'pki', 'admin.crt'),
    key: join(dir, 'root', 'pki', 'admin.key'),
  };
  await until(
    async () =>
      JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items[0]?.status?.containerStatuses?.[0]
        ?.state?.running,
    20_000,
    'pod running',
  );
}, 30_000);
afterAll(async () => {
  await k?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('errors are Kubernetes Status on both ports', () => {
  it.each(['/%', '/pods/%zz', `/containerLogs/default/${'a'.repeat(300)}/c`])('secure port: %s', async (path) => {
    const r = await secure('GET', path);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: r.status });
  });
  it.each(['/%', `/x/${'a'.repeat(300)}`, '/nonexistent'])('read-only port: %s', async (path) => {
    const r = await httpGet(`http://127.0.0.1:${ports.ro}${path}`);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', status: 'Failure', code: r.status });
  });
  it('headers over the limit get 431 with a Status on both ports (regression: Fastify JSON)', async () => {
    const big = { 'X-Big': 'b'.repeat(20_000) };
    const ro = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: ports.ro, path: '/pods', headers: big }, (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(ro.status).toBe(431);
    expect(JSON.parse(ro.body)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Request Header Fields Too Large',
      code: 431,
    });
    const tls = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: ports.port,
          path: '/pods',
          headers: big,
          ca: readFileSync(pki.ca),
          cert: readFileSync(pki.cert),
          key: readFileSync(pki.key),
        },
        (res) => {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => resolve({ status: res.statusCode!, body: b }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(tls.status).toBe(431);
    expect(JSON.parse(tls.body)).toMatchObject({ kind: 'Status', code: 431 });
  });
  it('a valid 253-character pod name is not refused as too long', async () => {
    const r = await secure('GET', `/containerLogs/default/${'a'.repeat(253)}/c`);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 404 });
  });
  it("plain HTTP on the TLS port gets Go's 400", async () => {
    const reply = await new Promise<string>((resolve) => {
      const s = connect(ports.port, '127.0.0.1');
      let b = '';
      s.on('data', (d) => {
        b += d;
      });
      s.on('close', () => resolve(b));
      s.on('error', () => resolve(b));
      s.write('GET /pods HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    expect(reply).toBe('HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n');
  });
});

describe('connections the kubelet refuses are closed', () => {
  const descriptors = (): number => readdirSync(`/proc/${k.proc.pid}/fd`).length;
  // Regression: a refused request was answered with a half-close; a client that never reads never sent its own FIN,
  // so each such connection kept one of the kubelet's descriptors for good (the servers allow half-open sockets).
  it('a client that never reads does not keep a descriptor after a bad request, on every port', async () => {
    const baseline = descriptors();
    const clients: Socket[] = [];
    for (const port of [ports.ro, ports.hz, ports.port])
      for (let i = 0; i < 20; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.pause();
        socket.on('error', () => {});
        // Malformed HTTP on the plain ports; plain HTTP on the TLS port.
        socket.write(port === ports.port ? 'GET /pods HTTP/1.1\r\nHost: x\r\n\r\n' : 'NOT HTTP\r\n\r\n');
        clients.push(socket);
      }
    await Promise.all(clients.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
    await until(() => descriptors() <= baseline + 2, 10_000, 'the refused connections closed by the kubelet');
    for (const socket of clients) socket.destroy();
  });
  // Regression: Node's server answered every pipelined request at once and kept each answer until the client read
  // the ones before it; 50 clients pipelining 2,000 `GET /pods` each took the kubelet from 88 to 388 MB.
  it('a client that pipelines requests without reading is dropped past the limit', async () => {
    const socket = connect(ports.ro, '127.0.0.1');
    socket.pause();
    let text = '';
    const closed = new Promise<boolean>((resolve) => {
      socket.on('close', () => resolve(true));
      setTimeout(() => resolve(false), 8_000);
    });
    socket.on('error', () => {});
    socket.write('GET /pods HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    socket.on('data', (chunk) => (text += chunk));
    socket.resume();
    expect(await closed).toBe(true);
    expect(text.split('HTTP/1.1 200 OK').length - 1).toBeLessThan(200);
    socket.destroy();
    // A client that pipelines a few and reads gets every answer.
    const answers = await new Promise<string>((resolve) => {
      const socket = connect(ports.ro, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
        if (text.split('HTTP/1.1 200 OK').length - 1 === 4) socket.end();
      });
      socket.on('close', () => resolve(text));
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(4));
    });
    expect(answers.split('HTTP/1.1 200 OK').length - 1).toBe(4);
  });
});

describe('audit trail', () => {
  it('logs exec and run with user, pod, container and command, not the stdin data', async () => {
    const secret = `stdin-secret-${process.pid}`;
    const pod = 'box-hard';
    await wsSession(
      `wss://127.0.0.1:${ports.port}/exec/default/${pod}/c?command=cat&command=-&input=1&output=1`,
      ['v5.channel.k8s.io'],
      pki,
      {
        input: [
          [0, `${secret}\n`],
          [255, Buffer.from([0])],
        ],
      },
    );
    await secure('POST', `/run/default/${pod}/c?cmd=echo%20hi`);
    await until(() => k.output().includes('"verb":"run"'), 5000, 'run audited');
    const lines = k
      .output()
      .split('\n')
      .filter((l) => l.includes('"component":"audit"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          verb: 'exec',
          user: 'tskubelet-admin',
          namespace: 'default',
          pod,
          container: 'c',
          command: ['cat', '-'],
        }),
        expect.objectContaining({
          verb: 'run',
          user: 'tskubelet-admin',
          namespace: 'default',
          pod,
          container: 'c',
          command: ['echo', 'hi'],
        }),
      ]),
    );
    expect(k.output()).not.toContain(secret);
  });
});
