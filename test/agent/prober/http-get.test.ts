/**
 * The probes' plain-HTTP GET against real servers: node:http (content-length and chunked bodies,
 * the request's headers), raw TCP servers that keep the connection open, answer HTTP/1.0
 * close-delimited, send an interim 100, or never stop sending headers or body (bounded), and the
 * pure parts: the request bytes (header injection refused), the head parser, the chunk decoder.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { dechunk, parseHead, plainGet, requestBytes } from '../../../src/agent/prober/http-get.js';

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

const get = (p: number, path = '/', o: { headers?: [string, string][]; timeoutMs?: number; hostHeader?: string } = {}) =>
  plainGet({
    host: '127.0.0.1',
    port: p,
    path,
    hostHeader: o.hostHeader ?? `127.0.0.1:${p}`,
    headers: o.headers ?? [],
    timeoutMs: o.timeoutMs ?? 2000,
    maxBody: 10 * 1024,
  });

describe('plainGet', () => {
  it('reads content-length and chunked bodies; sends the headers in order, repeats kept, Connection: close', async () => {
    expect(
      await get(port, '/ok?x=1', {
        headers: [
          ['X-A', '1'],
          ['X-A', '2'],
          ['User-Agent', 'kube-probe/1.32'],
        ],
      }),
    ).toEqual({ status: 200, location: undefined, body: 'fine' });
    expect(seen.at(-1)).toEqual({
      url: '/ok?x=1',
      raw: ['Host', `127.0.0.1:${port}`, 'X-A', '1', 'X-A', '2', 'User-Agent', 'kube-probe/1.32', 'Connection', 'close'],
    });
    expect((await get(port, '/chunked')).body).toBe('one,two');
    expect((await get(port, '/big')).body).toHaveLength(10 * 1024);
  });

  it('a Host header in the spec replaces the default', async () => {
    await get(port, '/', { headers: [['Host', 'example.test']] });
    expect(seen.at(-1)?.raw.slice(0, 2)).toEqual(['Host', 'example.test']);
  });

  it('finishes on content-length even when the server keeps the connection open; reads HTTP/1.0 to EOF; skips an interim 100', async () => {
    const keep = await rawServer((c) => c.write('HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 3\r\n\r\nabc'));
    expect(await get(keep, '/', { timeoutMs: 1000 })).toEqual({ status: 302, location: '/next', body: 'abc' });
    const old = await rawServer((c) => {
      c.write('HTTP/1.0 200 OK\r\n\r\npart1 ');
      setTimeout(() => c.end('part2'), 20);
    });
    expect(await get(old)).toEqual({ status: 200, location: undefined, body: 'part1 part2' });
    const interim = await rawServer((c) => c.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n'));
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
      const t = setInterval(() => c.write('f'.repeat(4000)), 1);
      c.on('close', () => clearInterval(t));
    });
    expect((await get(body)).status).toBe(200);
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

describe('request bytes and parsers (pure)', () => {
  it('refuses header injection and invalid names', () => {
    expect(() => requestBytes('/', 'h', [['X-A', 'v\r\nEvil: 1']])).toThrow('net/http: invalid header field value for "X-A"');
    expect(() => requestBytes('/', 'h', [['X A', 'v']])).toThrow('net/http: invalid header field name "X A"');
    expect(requestBytes('/p', 'h:1', [['A', 'b']])).toBe('GET /p HTTP/1.1\r\nHost: h:1\r\nA: b\r\nConnection: close\r\n\r\n');
  });

  it.each([
    ['HTTP/1.1 200 OK\r\nA: b\r\n', undefined],
    ['HTTP/1.1 404 Not Found\r\nLocation:  /x \r\n\r\nbody', { status: 404, location: '/x', bodyStart: 42 }],
    ['HTTP/1.1 200\r\n\r\n', { status: 200, location: undefined, bodyStart: 16 }],
  ])('parseHead(%j)', (text, want) => {
    const h = parseHead(Buffer.from(text));
    if (!want) return expect(h).toBeUndefined();
    expect(h).toMatchObject({ status: want.status, bodyStart: want.bodyStart });
    expect((h as { headers: Map<string, string> }).headers.get('location')).toBe(want.location);
  });

  it('parseHead refuses a response that is not HTTP', () => {
    expect(parseHead(Buffer.from('SSH-2.0-OpenSSH\r\n\r\n'))).toBeInstanceOf(Error);
  });

  it.each([
    ['4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n', 'abcdef', true],
    ['4\r\nabcd\r\n2\r\ne', 'abcde', false],
    ['4;ext=1\r\nabcd\r\n', 'abcd', false],
    ['zz\r\n', '', true],
  ])('dechunk(%j)', (text, data, done) => expect(dechunk(Buffer.from(text))).toEqual({ data: Buffer.from(data), done }));
});
