/**
 * The probes' GET (node:http) against real servers: node:http (content-length and chunked bodies,
 * the request's headers), raw TCP servers that keep the connection open, answer HTTP/1.0
 * close-delimited, send an interim 100, or never stop sending headers or body (bounded), and the
 * request's headers (header injection refused, in Go's words).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { probeGet, probeHostHeader, requestHeaders } from '../../../src/agent/prober/http-get.js';

let server: http.Server;
let port: number;
const seen: { url?: string; raw: string[] }[] = [];
const raw: net.Server[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url, raw: req.rawHeaders });
    if (req.url === '/chunked') {
      res.write('one,');
      setTimeout(() => res.end('two'), 20);
      return;
    }
    if (req.url === '/big') return res.end('x'.repeat(100_000));
    res.end('fine');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.close();
  for (const s of raw) s.close();
});

async function rawServer(onConn: (s: net.Socket) => void): Promise<number> {
  const s = net.createServer((c) => {
    c.on('error', () => {});
    c.once('data', () => onConn(c));
  });
  raw.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

const get = (p: number, path = '/', o: { headers?: [string, string][]; timeoutMs?: number } = {}) =>
  probeGet(new URL(`http://127.0.0.1:${p}${path}`), o.headers ?? [], {
    timeoutMs: o.timeoutMs ?? 2000,
    maxBody: 10 * 1024,
  });

describe('probeGet', () => {
  it('reads content-length and chunked bodies; sends the headers in order, repeats kept, Connection: close', async () => {
    expect(
      await get(port, '/ok?x=1', {
        headers: [
          ['X-A', '1'],
          ['X-A', '2'],
          ['User-Agent', 'kube-probe/1.36'],
        ],
      }),
    ).toEqual({ status: 200, location: undefined, body: 'fine' });
    const last = seen.at(-1)!;
    const pairs = (raw: string[]) => raw.flatMap((v, i) => (i % 2 ? [] : [`${v.toLowerCase()}: ${raw[i + 1]}`]));
    expect(last.url).toBe('/ok?x=1');
    expect(pairs(last.raw).sort()).toEqual(
      [`host: 127.0.0.1:${port}`, 'x-a: 1', 'x-a: 2', 'user-agent: kube-probe/1.36', 'connection: close'].sort(),
    );
    expect(pairs(last.raw).filter((p) => p.startsWith('x-a'))).toEqual(['x-a: 1', 'x-a: 2']);
    expect((await get(port, '/chunked')).body).toBe('one,two');
    expect((await get(port, '/big')).body).toHaveLength(10 * 1024);
  });

  it('a Host header in the spec replaces the default', async () => {
    await get(port, '/', { headers: [['Host', 'example.test']] });
    const raw = seen.at(-1)!.raw;
    expect(raw.filter((_, i) => i % 2 === 0 && raw[i].toLowerCase() === 'host').length).toBe(1);
    expect(raw[raw.findIndex((v) => v.toLowerCase() === 'host') + 1]).toBe('example.test');
  });

  it('finishes on content-length even when the server keeps the connection open; reads HTTP/1.0 to EOF; skips an interim 100', async () => {
    const keep = await rawServer((c) =>
      c.write('HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 3\r\n\r\nabc'),
    );
    expect(await get(keep, '/', { timeoutMs: 1000 })).toEqual({ status: 302, location: '/next', body: 'abc' });
    const old = await rawServer((c) => {
      c.write('HTTP/1.0 200 OK\r\n\r\npart1 ');
      setTimeout(() => c.end('part2'), 20);
    });
    expect(await get(old)).toEqual({ status: 200, location: undefined, body: 'part1 part2' });
    const interim = await rawServer((c) =>
      c.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n'),
    );
    expect((await get(interim)).status).toBe(503);
  });

  it('is bounded: endless headers fail, an endless body is cut, a silent server times out, a refused port says so', async () => {
    const headers = await rawServer((c) => {
      c.write('HTTP/1.1 200 OK\r\n');
      const t = setInterval(() => c.write(`X-Pad: ${'y'.repeat(4000)}\r\n`), 1);
      c.on('close', () => clearInterval(t));
    });
    await expect(get(headers)).rejects.toThrow('server response headers exceeded 65536 bytes; aborted');
    const body = await rawServer((c) => {
      c.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      const t = setInterval(() => c.write(`fa0\r\n${'f'.repeat(4000)}\r\n`), 1);
      c.on('close', () => clearInterval(t));
    });
    const endless = await get(body);
    expect([endless.status, endless.body.length]).toEqual([200, 10 * 1024]);
    // A chunk-size line that never ends is a malformed response (Go's chunked reader fails too).
    const malformed = await rawServer((c) => {
      c.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      const t = setInterval(() => c.write('f'.repeat(4000)), 1);
      c.on('close', () => clearInterval(t));
    });
    await expect(get(malformed)).rejects.toThrow(/^net\/http: malformed HTTP response/);
    const silent = await rawServer(() => {});
    await expect(get(silent, '/', { timeoutMs: 200 })).rejects.toThrow('context deadline exceeded');
    const closed = await new Promise<number>((r) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => r(p));
      });
    });
    await expect(get(closed)).rejects.toThrow(`dial tcp 127.0.0.1:${closed}: connect: connection refused`);
    const eof = await rawServer((c) => c.end());
    await expect(get(eof)).rejects.toThrow('EOF');
  });
});

describe('request headers (pure)', () => {
  it('the default Host carries the port, as Go’s probe request (the URL API leaves a default port out)', () => {
    expect(probeHostHeader(new URL('http://10.0.0.1/healthz'))).toBe('10.0.0.1:80');
    expect(probeHostHeader(new URL('https://[fd00::1]/'))).toBe('[fd00::1]:443');
    expect(probeHostHeader(new URL('http://10.0.0.1:8080/'))).toBe('10.0.0.1:8080');
  });
  it('refuses header injection and invalid names in Go’s words; keeps repeats; the first Host wins', () => {
    expect(() => requestHeaders([['X-A', 'v\r\nEvil: 1']])).toThrow('net/http: invalid header field value for "X-A"');
    expect(() => requestHeaders([['X A', 'v']])).toThrow('net/http: invalid header field name "X A"');
    expect(
      requestHeaders([
        ['A', 'b'],
        ['A', 'c'],
        ['Host', 'h1'],
        ['host', 'h2'],
      ]),
    ).toEqual({ A: ['b', 'c'], Host: 'h1' });
  });
});
