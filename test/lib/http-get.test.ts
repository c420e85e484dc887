import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { AddressInfo } from 'node:net';
import { getText } from '../../src/lib/http-get.js';

let server: http.Server;
let base: string;
let port: number;
const seen: http.IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers);
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/pod') return res.end('kind: Pod');
    // /hop?n=k: k more redirects, then 404.
    if (u.pathname === '/hop')
      return Number(u.searchParams.get('n')) > 0
        ? res.writeHead(302, { location: `/hop?n=${Number(u.searchParams.get('n')) - 1}` }).end()
        : res.writeHead(404).end();
    if (u.pathname === '/relative') return res.writeHead(301, { location: 'pod' }).end();
    // Another host (localhost, not 127.0.0.1): credentials are not sent there.
    if (u.pathname === '/elsewhere') return res.writeHead(307, { location: `http://localhost:${port}/pod` }).end();
    if (u.pathname === '/big') return res.writeHead(200, { 'content-length': '2000' }).end('x'.repeat(2000));
    if (u.pathname === '/big-chunked') {
      res.write('y'.repeat(600));
      return setTimeout(() => res.end('y'.repeat(600)), 10);
    }
    if (u.pathname === '/missing') return res.writeHead(404).end('no');
    // /slow: never answers.
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(() => server.closeAllConnections?.() ?? server.close());

const get = (path: string, o: { headers?: Record<string, string[]>; timeoutMs?: number; signal?: AbortSignal } = {}) =>
  getText(`${base}${path}`, { timeoutMs: o.timeoutMs ?? 2000, maxBytes: 1000, headers: o.headers, signal: o.signal });

describe('getText', () => {
  it('answers the status and the body, sending every value of a header', async () => {
    seen.length = 0;
    expect(await get('/pod', { headers: { 'x-a': ['1', '2'] } })).toEqual({ status: 200, body: 'kind: Pod' });
    expect(seen[0]['x-a']).toBe('1, 2');
    expect(await get('/missing')).toEqual({ status: 404, body: 'no' });
  });

  it("follows redirects (relative too) as Go's client does, not the 10th, and drops credentials when the host changes", async () => {
    expect(await get('/relative')).toEqual({ status: 200, body: 'kind: Pod' });
    await expect(get('/hop?n=10')).rejects.toThrow(/10 redirects/);
    await expect(get('/hop?n=9')).resolves.toMatchObject({ status: 404 });
    seen.length = 0;
    expect(await get('/elsewhere', { headers: { authorization: ['Bearer s3cret'], 'x-keep': ['k'] } })).toEqual({
      status: 200,
      body: 'kind: Pod',
    });
    expect(seen[0].authorization).toBe('Bearer s3cret');
    expect(seen[1].authorization).toBeUndefined();
    expect(seen[1]['x-keep']).toBe('k');
  });

  it('gives no body past the cap, declared or streamed', async () => {
    expect(await get('/big')).toEqual({ status: 200, body: undefined });
    expect(await get('/big-chunked')).toEqual({ status: 200, body: undefined });
  });

  it('gives up at the deadline or when aborted', async () => {
    await expect(get('/slow', { timeoutMs: 100 })).rejects.toThrow();
    const ac = new AbortController();
    const p = get('/slow', { signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toThrow();
    await expect(getText('ftp://127.0.0.1/x', { timeoutMs: 100, maxBytes: 10 })).rejects.toThrow(
      /unsupported protocol/,
    );
  });

  it('gives up at the deadline though a garbage collection runs meanwhile (regression: Node 20 lost the timeout)', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    for (let i = 0; i < 3; i++) {
      const slow = get('/slow', { timeoutMs: 100 });
      setTimeout(gc, 20);
      await expect(slow).rejects.toThrow();
    }
  }, 10_000);
});
