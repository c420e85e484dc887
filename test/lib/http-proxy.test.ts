/**
 * The apiserver client through an HTTP proxy, as client-go: HTTPS_PROXY (unless NO_PROXY names the
 * server) or the kubeconfig's proxy-url; the connection is a CONNECT tunnel with TLS to the
 * apiserver inside it. A real CONNECT proxy and the fake apiserver over HTTPS.
 */
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../src/lib/kube-client.js';
import { exemptFromProxy, proxyFor } from '../../src/lib/http-proxy.js';
import { startFakeWithKubeconfig, type FakeKubeApiserver } from '../fixtures/apiserver/server.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-proxy-'));
let api: FakeKubeApiserver;
let kubeconfig: string;
const tunnels: string[] = [];
const proxy = http.createServer();
proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
  tunnels.push(req.url ?? '');
  const [host, port] = (req.url ?? '').split(/:(?=\d+$)/);
  const upstream = net.connect(Number(port), host, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
});
let proxyUrl = '';
const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY };

beforeAll(async () => {
  ({ api, kubeconfig } = await startFakeWithKubeconfig(dir, { user: 'tester' }));
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
});
afterAll(async () => {
  proxy.close();
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the apiserver client through a proxy', () => {
  it('tunnels through HTTPS_PROXY, and not when NO_PROXY names the server', async () => {
    const target = new URL(api.url).host;
    process.env.HTTPS_PROXY = proxyUrl;
    tunnels.length = 0;
    const proxied = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
    expect((await proxied.request({ path: '/api/v1/pods' })).status).toBe(200);
    expect(tunnels).toEqual([target]);
    process.env.NO_PROXY = 'localhost,127.0.0.0/8';
    tunnels.length = 0;
    const direct = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
    expect((await direct.request({ path: '/api/v1/pods' })).status).toBe(200);
    expect(tunnels).toEqual([]);
  });

  it("tunnels through the kubeconfig cluster's proxy-url", async () => {
    delete process.env.HTTPS_PROXY;
    const withProxy = join(dir, 'kubeconfig-proxy');
    writeFileSync(
      withProxy,
      readFileSync(kubeconfig, 'utf8').replace('cluster: {server:', `cluster: {proxy-url: "${proxyUrl}", server:`),
    );
    tunnels.length = 0;
    const client = await createKubeClient(withProxy, { timeoutMs: 5000 });
    expect((await client.request({ path: '/api/v1/nodes' })).status).toBe(200);
    expect(tunnels).toHaveLength(1);
  });

  it("NO_PROXY as Go's httpproxy reads it", () => {
    expect(exemptFromProxy('api.example.com', '443', 'example.com')).toBe(true);
    expect(exemptFromProxy('api.example.com', '443', '.example.com')).toBe(true);
    expect(exemptFromProxy('example.org', '443', 'example.com')).toBe(false);
    expect(exemptFromProxy('10.1.2.3', '6443', '10.0.0.0/8')).toBe(true);
    expect(exemptFromProxy('10.1.2.3', '6443', '10.1.2.3:443')).toBe(false);
    expect(exemptFromProxy('10.1.2.3', '6443', '10.1.2.3:6443')).toBe(true);
    expect(exemptFromProxy('anything', '1', '*')).toBe(true);
    expect(proxyFor(new URL('https://a.b:6443'), undefined, { https_proxy: 'proxy:3128' })?.href).toBe(
      'http://proxy:3128/',
    );
    expect(proxyFor(new URL('http://a.b:8080'), undefined, { HTTPS_PROXY: 'http://proxy:3128' })).toBeUndefined();
  });
});
