/**
 * The probe handlers against real peers: an HTTP server (redirects, status codes, headers), a TCP port, a gRPC health
 * server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { probeUrl, runProbeAction, resolvePort } from '../../../src/agent/prober/probe-handlers.js';
import type { RuntimeService } from '../../../src/cri/services.js';

let server: http.Server;
let port: number;
const seen: http.IncomingHttpHeaders[] = [];
const urls: string[] = [];
let health: grpc.Server;
let grpcPort: number;
let serving = 1;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers);
    urls.push(req.url ?? '');
    if (req.url === '/ok' || req.url?.startsWith('/echo?')) return res.end('fine');
    if (req.url === '/redirect') {
      res.writeHead(302, { Location: '/ok' });
      return res.end();
    }
    if (req.url === '/elsewhere') {
      res.writeHead(302, { Location: 'http://192.0.2.1:9/x' });
      return res.end();
    }
    if (req.url === '/slow') return setTimeout(() => res.end('late'), 3000);
    // /hop?n=k: k more redirects on this host, then 200.
    if (req.url?.startsWith('/hop?')) {
      const left = Number(new URL(req.url, 'http://x').searchParams.get('n'));
      if (left > 0) res.writeHead(302, { Location: `/hop?n=${left - 1}` });
      return res.end('fine');
    }
    res.writeHead(500);
    res.end('bad');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  health = new grpc.Server();
  health.register(
    '/grpc.health.v1.Health/Check',
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const service = call.request.length ? call.request.subarray(2).toString() : '';
      cb(null, Buffer.from([0x08, service === 'missing' ? 3 : serving]));
    },
    (b: Buffer) => b,
    (b: Buffer) => b,
    'unary',
  );
  grpcPort = await new Promise<number>((r, j) =>
    health.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))),
  );
});
afterAll(async () => {
  server.close();
  health.forceShutdown();
});

const target = (over: Partial<Parameters<typeof runProbeAction>[1]> = {}) => ({
  runtime: {} as RuntimeService,
  containerId: 'c',
  container: { name: 'c', ports: [{ name: 'web', containerPort: port }] },
  podIP: '127.0.0.1',
  timeoutMs: 1000,
  ...over,
});

describe('probe handlers', () => {
  it('httpGet: 2xx succeeds, redirects on the same host are followed, another host ends in success, 5xx fails, the User-Agent is kube-probe', async () => {
    expect(
      await runProbeAction(
        { httpGet: { path: '/ok', port: 'web', httpHeaders: [{ name: 'X-Test', value: 'yes' }] } },
        target(),
      ),
    ).toEqual({
      result: 'success',
      output: 'fine',
    });
    expect(seen.at(-1)).toMatchObject({ 'user-agent': 'kube-probe/1.36', 'x-test': 'yes' });
    expect((await runProbeAction({ httpGet: { path: '/redirect', port } }, target())).result).toBe('success');
    expect(await runProbeAction({ httpGet: { path: '/elsewhere', port } }, target())).toEqual({
      result: 'success',
      warning: true,
      output: 'Probe terminated redirects, Response body: ',
    });
    expect(await runProbeAction({ httpGet: { path: '/bad', port } }, target())).toEqual({
      result: 'failure',
      output: 'HTTP probe failed with statuscode: 500',
    });
    const slow = await runProbeAction({ httpGet: { path: '/slow', port } }, target({ timeoutMs: 300 }));
    expect(slow.result).toBe('failure');
    expect(slow.output).toContain('context deadline exceeded');
    expect(await runProbeAction({ httpGet: { path: '/', port: 'nope' } }, target())).toEqual({
      result: 'failure',
      output: 'unable to find port nope in container c',
    });
  });

  it("httpGet: follows nine redirects on the same host and stops at the tenth, as Go's client", async () => {
    expect(await runProbeAction({ httpGet: { path: '/hop?n=9', port } }, target())).toEqual({
      result: 'success',
      output: 'fine',
    });
    expect(await runProbeAction({ httpGet: { path: '/hop?n=10', port } }, target())).toEqual({
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/hop?n=1": stopped after 10 redirects`,
    });
  });

  it('httpGet: a path with a query string reaches the server with that exact query (regression: it was sent as %3F; upstream formatURL)', async () => {
    urls.length = 0;
    expect((await runProbeAction({ httpGet: { path: '/echo?a=b&c=d', port } }, target())).result).toBe('success');
    expect((await runProbeAction({ httpGet: { path: '/echo?msg=poststart', port } }, target())).result).toBe('success');
    expect(urls).toEqual(['/echo?a=b&c=d', '/echo?msg=poststart']);
  });

  it('probeUrl: the path as a URL reference on the probe’s own scheme, host and port', () => {
    expect(probeUrl('http', '10.0.0.1', 8080, '/echo?a=b&c=d').href).toBe('http://10.0.0.1:8080/echo?a=b&c=d');
    expect(probeUrl('https', 'fd00::1', 443, 'healthz').href).toBe('https://[fd00::1]/healthz'); // WHATWG drops a default port; the request still goes to it
    expect(probeUrl('http', '10.0.0.1', 80, '').href).toBe('http://10.0.0.1/');
    expect(probeUrl('http', '10.0.0.1', 81, '//elsewhere/x?y#frag').href).toBe('http://10.0.0.1:81/x?y');
    expect(probeUrl('http', '10.0.0.1', 81, '/a b').href).toBe('http://10.0.0.1:81/a%20b');
  });

  it('tcpSocket: connect succeeds; a closed port fails with the dial error', async () => {
    expect((await runProbeAction({ tcpSocket: { port } }, target())).result).toBe('success');
    const closed = await new Promise<number>((r) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => r(p));
      });
    });
    expect(await runProbeAction({ tcpSocket: { port: closed } }, target())).toEqual({
      result: 'failure',
      output: `dial tcp 127.0.0.1:${closed}: connect: connection refused`,
    });
  });

  it('grpc: SERVING succeeds, NOT_SERVING and unknown services fail', async () => {
    expect((await runProbeAction({ grpc: { port: grpcPort } }, target())).result).toBe('success');
    serving = 2;
    expect(await runProbeAction({ grpc: { port: grpcPort } }, target())).toEqual({
      result: 'failure',
      output: 'service unhealthy (responded with "NOT_SERVING")',
    });
    serving = 1;
    expect(await runProbeAction({ grpc: { port: grpcPort, service: 'missing' } }, target())).toEqual({
      result: 'failure',
      output: 'service unhealthy (responded with "SERVICE_UNKNOWN")',
    });
  });

  it('grpc: a server without the health service, one that never answers, and a closed port fail with upstream wording', async () => {
    const bare = new grpc.Server();
    bare.register(
      '/grpc.health.v1.Health/Watch',
      () => {},
      (b: Buffer) => b,
      (b: Buffer) => b,
      'unary',
    );
    const slow = new grpc.Server();
    slow.register(
      '/grpc.health.v1.Health/Check',
      () => {},
      (b: Buffer) => b,
      (b: Buffer) => b,
      'unary',
    );
    const bind = (s: grpc.Server) =>
      new Promise<number>((r, j) =>
        s.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))),
      );
    const [barePort, slowPort] = [await bind(bare), await bind(slow)];
    try {
      const unimpl = await runProbeAction({ grpc: { port: barePort } }, target());
      expect(unimpl.result).toBe('failure');
      expect(unimpl.output).toMatch(
        /^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): /,
      );
      expect(await runProbeAction({ grpc: { port: slowPort } }, target({ timeoutMs: 300 }))).toEqual({
        result: 'failure',
        output: 'timeout: health rpc did not complete within 0.3s',
      });
      bare.forceShutdown();
      const refused = await runProbeAction({ grpc: { port: barePort } }, target());
      expect(refused.output).toMatch(
        new RegExp(`^timeout: failed to connect service "127\\.0\\.0\\.1:${barePort}" within 1s: .*ECONNREFUSED`),
      );
    } finally {
      bare.forceShutdown();
      slow.forceShutdown();
    }
  });

  it('exec: exit 0 succeeds, others fail with the output, a timeout fails', async () => {
    const runtime = {
      execSync: async (_id: string, cmd: string[]) => {
        if (cmd[0] === 'slow') throw Object.assign(new Error('timed out'), { code: 'Timeout' });
        return {
          stdout: Buffer.from(cmd[0] === 'ok' ? '' : 'not ready\n'),
          stderr: Buffer.alloc(0),
          exit_code: cmd[0] === 'ok' ? 0 : 1,
        };
      },
    } as unknown as RuntimeService;
    expect((await runProbeAction({ exec: { command: ['ok'] } }, target({ runtime }))).result).toBe('success');
    expect(await runProbeAction({ exec: { command: ['bad'] } }, target({ runtime }))).toEqual({
      result: 'failure',
      output: 'not ready\n',
      exitCode: 1,
    });
    expect(await runProbeAction({ exec: { command: ['slow', 'x'] } }, target({ runtime }))).toEqual({
      result: 'failure',
      output: 'command "slow x" timed out',
    });
    expect(resolvePort('8080', { name: 'c' })).toBe(8080);
  });
});
