/**
 * Fuzz-style: random and garbage paths, methods, headers and bodies — and bytes that are not HTTP
 * at all — against the real CLI's 10250 without valid credentials. The process never crashes and
 * never answers 2xx/3xx; afterwards a valid client is still served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  httpGet,
  httpsGet,
  kubeletArgs,
  startKubelet,
  untilServing,
  type Kubelet,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-fuzz-'));
const root = join(dir, 'root');
mkdirSync(join(dir, 'manifests'));
let ports: { port: number; ro: number; hz: number };
let kubelet: Kubelet;

// A small deterministic PRNG (mulberry32) so a failure can be replayed from its seed.
function prng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const seed = Number(process.env.FUZZ_SEED ?? 20261122);
const rnd = prng(seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
const printable = (n: number) =>
  Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(rnd() * 94))).join('');

const paths = [
  '/pods',
  '/exec/default/p/c?command=sh&input=1',
  '/containerLogs/default/p/c',
  '/configz',
  '/healthz',
  '/runningpods/',
  '/logs/../../etc/passwd',
  '/stats/summary',
  '/metrics',
  '/%2e%2e/%2e%2e',
  '/containerLogs/..%2F..%2F/x/y',
  '/portForward/default/p',
  '//',
  '/\u0000',
  `/${'a'.repeat(9000)}`,
];
const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'CONNECT', 'TRACE', 'BREW', 'G\u0000T'];
const authHeaders = [
  'Bearer ',
  'Bearer x',
  'Basic YWRtaW46YWRtaW4=',
  `Bearer ${printable(200)}`,
  'Bearer \u0000',
  'bearer a b c',
  printable(40),
];

function requestBytes(): Buffer {
  const kind = rnd();
  if (kind < 0.15) return bytes(1 + Math.floor(rnd() * 2000)); // not HTTP at all
  const path = rnd() < 0.7 ? pick(paths) : `/${printable(1 + Math.floor(rnd() * 300))}`;
  const lines = [`${pick(methods)} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (rnd() < 0.6) lines.push(`Authorization: ${pick(authHeaders)}`);
  if (rnd() < 0.3)
    lines.push(
      'Upgrade: websocket',
      'Connection: Upgrade',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Version: 13',
      `Sec-WebSocket-Protocol: ${pick(['v4.channel.k8s.io', 'SPDY/3.1', printable(20)])}`,
    );
  if (rnd() < 0.2) lines.push(`X-${printable(10)}: ${printable(Math.floor(rnd() * 5000))}`);
  if (rnd() < 0.1) lines.push('Transfer-Encoding: chunked', 'Content-Length: 5');
  const body = rnd() < 0.4 ? bytes(Math.floor(rnd() * 3000)) : Buffer.alloc(0);
  if (body.length && rnd() < 0.7)
    lines.push(`Content-Length: ${rnd() < 0.8 ? body.length : Math.floor(rnd() * 99999)}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Sends raw bytes over TLS (or plain TCP); resolves the status code of the first response line, or 0. */
function send(port: number, payload: Buffer, plain = false): Promise<number> {
  return new Promise((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
    };
    const done = () => {
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(buf);
      resolve(m ? Number(m[1]) : 0);
    };
    const s = plain
      ? net.connect({ host: '127.0.0.1', port })
      : tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    s.setTimeout(3000, () => s.destroy());
    s.on(plain ? 'connect' : 'secureConnect', () => {
      s.write(payload);
      s.end();
    });
    s.on('data', onData);
    s.on('close', done);
    s.on('error', () => undefined);
  });
}

beforeAll(async () => {
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletArgs({ dir, ports, node: 'fuzz-node', manifests: join(dir, 'manifests') }));
  await untilServing(ports, kubelet);
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe(`fuzzing 10250 without credentials (seed ${seed})`, () => {
  it('never crashes and never answers 2xx/3xx', async () => {
    const seen = new Map<number, number>();
    const bad: string[] = [];
    for (let batch = 0; batch < 40; batch++) {
      const payloads = Array.from({ length: 15 }, requestBytes);
      const codes = await Promise.all(payloads.map((p) => send(ports.port, p, rnd() < 0.05)));
      codes.forEach((c, i) => {
        seen.set(c, (seen.get(c) ?? 0) + 1);
        if (c >= 200 && c < 400)
          bad.push(`${c} for ${JSON.stringify(payloads[i].subarray(0, 120).toString('latin1'))}`);
      });
    }
    expect(bad).toEqual([]);
    expect(kubelet.proc.exitCode).toBeNull();
    expect(seen.get(401)).toBeGreaterThan(100); // most well-formed requests reach authentication
    // Still serving: a valid client gets in, the read-only port answers.
    const pki = {
      ca: join(root, 'pki', 'ca.crt'),
      cert: join(root, 'pki', 'admin.crt'),
      key: join(root, 'pki', 'admin.key'),
    };
    expect((await httpsGet(`https://127.0.0.1:${ports.port}/healthz`, pki)).status).toBe(200);
    expect((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).status).toBe(200);
    for (const f of ['admin.key', 'kubelet.key', 'ca.key'])
      expect(kubelet.output()).not.toContain(readFileSync(join(root, 'pki', f), 'utf8').split('\n')[1]);
    expect(kubelet.output()).not.toMatch(/uncaught|unhandled/i);
  }, 120_000);
});
