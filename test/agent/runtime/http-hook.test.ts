/**
 * The httpGet lifecycle hook against real servers: any answer succeeds, a request without an answer fails with
 * Go's error, and an HTTPS hook a plain HTTP server answers falls back to HTTP (without its Authorization header),
 * told in a LifecycleHTTPFallback event and counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Container, Pod } from '../../../src/api/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import { createCertificate, newKeyPem } from '../../../src/lib/x509.js';
import { httpFallbackUrl, runHttpHook } from '../../../src/agent/runtime/http-hook.js';
import { runHook } from '../../../src/agent/runtime/lifecycle-hooks.js';
import { freePort } from '../../e2e/helpers.js';

let plain: http.Server;
let secure: https.Server;
let plainPort: number;
let securePort: number;
const seen: { server: string; url: string; headers: http.IncomingHttpHeaders }[] = [];

const handler = (server: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
  seen.push({ server, url: req.url ?? '', headers: req.headers });
  // Any status: upstream reads none.
  res.writeHead(req.url === '/missing' ? 404 : 500).end('no');
};

beforeAll(async () => {
  plain = http.createServer(handler('http'));
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  plainPort = (plain.address() as AddressInfo).port;
  const key = await newKeyPem();
  const now = Date.now();
  const cert = await createCertificate({
    subject: { cn: 'hook' },
    key: { privateKeyPem: key },
    usage: 'server',
    sans: { dns: [], ips: ['127.0.0.1'] },
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3_600_000),
  });
  secure = https.createServer({ key, cert }, handler('https'));
  await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r));
  securePort = (secure.address() as AddressInfo).port;
});
afterAll(() => {
  plain.closeAllConnections();
  plain.close();
  secure.closeAllConnections();
  secure.close();
});

const container: Container = { name: 'main', image: 'busybox' };
const target = { container, podIP: '127.0.0.1', timeoutMs: 2000 };

describe('httpGet lifecycle hook', () => {
  it('succeeds on any answer, 404 and 500 included, with the kube-lifecycle User-Agent', async () => {
    seen.length = 0;
    const fallbacks: string[] = [];
    expect(await runHttpHook({ path: '/missing', port: plainPort }, target, (h) => fallbacks.push(h))).toBeUndefined();
    expect(await runHttpHook({ path: '/broken', port: plainPort }, target, (h) => fallbacks.push(h))).toBeUndefined();
    expect(seen.map((s) => s.headers['user-agent'])).toEqual(['kube-lifecycle/1.36', 'kube-lifecycle/1.36']);
    // HTTPS, not verified: the self-signed server answers.
    expect(await runHttpHook({ path: '/x', port: securePort, scheme: 'HTTPS' }, target, () => {})).toBeUndefined();
    expect(seen.at(-1)?.server).toBe('https');
    expect(fallbacks).toEqual([]);
  });

  it("fails with Go's error when nothing answers", async () => {
    const port = await freePort();
    expect(await runHttpHook({ path: '/x', port }, target, () => {})).toBe(
      `Get "http://127.0.0.1:${port}/x": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
    // HTTPS with nothing listening: no fallback either.
    const fallbacks: string[] = [];
    expect(await runHttpHook({ path: '/x', port, scheme: 'HTTPS' }, target, (h) => fallbacks.push(h))).toBe(
      `Get "https://127.0.0.1:${port}/x": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
    expect(fallbacks).toEqual([]);
  });

  it('falls back to HTTP for an HTTPS hook a plain HTTP server answers, without the Authorization header', async () => {
    seen.length = 0;
    const fallbacks: string[] = [];
    const action = {
      path: '/hook?x=1',
      port: plainPort,
      scheme: 'HTTPS' as const,
      httpHeaders: [
        { name: 'Authorization', value: 'Bearer s3cret' },
        { name: 'X-Other', value: 'kept' },
      ],
    };
    expect(await runHttpHook(action, target, (h) => fallbacks.push(h))).toBeUndefined();
    expect(fallbacks).toEqual([`127.0.0.1:${plainPort}`]);
    // The TLS attempt never reached the HTTP handler; the retry did, over HTTP, on the same path and port.
    expect(seen).toHaveLength(1);
    expect(seen[0].url).toBe('/hook?x=1');
    expect(seen[0].headers.authorization).toBeUndefined();
    expect(seen[0].headers['x-other']).toBe('kept');
  });

  it("keeps HTTPS's default port when it falls back", () => {
    expect(httpFallbackUrl(new URL('https://10.0.0.5/stop?now')).href).toBe('http://10.0.0.5:443/stop?now');
    expect(httpFallbackUrl(new URL('https://10.0.0.5:8443/stop')).href).toBe('http://10.0.0.5:8443/stop');
  });

  it('tells the fallback in a LifecycleHTTPFallback warning on the pod and counts it; a failure keeps upstream’s message', async () => {
    const pod = {
      metadata: { name: 'hooked', namespace: 'default', uid: 'u1' },
      spec: { containers: [] },
    } as unknown as Pod;
    const events: { reason: string; type: string; message: string; fieldPath?: string }[] = [];
    let counted = 0;
    const reporting = {
      runtime: {} as RuntimeService,
      containerId: 'c1',
      podIP: '127.0.0.1',
      timeoutMs: 2000,
      events: {
        record: (ref: { fieldPath?: string }, type: string, reason: string, message: string) =>
          events.push({ reason, type, message, fieldPath: ref.fieldPath }),
      },
      counters: { httpFallback: () => counted++, sleepTerminatedEarly: () => {} },
    };
    const hooked = (port: number): Container => ({
      ...container,
      lifecycle: { postStart: { httpGet: { path: '/start', port, scheme: 'HTTPS' } } },
    });
    expect(await runHook('postStart', pod, hooked(plainPort), reporting)).toBeUndefined();
    expect(counted).toBe(1);
    expect(events).toEqual([
      {
        reason: 'LifecycleHTTPFallback',
        type: 'Warning',
        message: `request to HTTPS lifecycle hook 127.0.0.1:${plainPort} got HTTP response, retry with HTTP succeeded`,
        fieldPath: undefined,
      },
    ]);
    const port = await freePort();
    expect(await runHook('postStart', pod, hooked(port), reporting)).toBe(
      `HTTP lifecycle hook (/start) for Container "main" in Pod "hooked_default(u1)" failed - error: Get "https://127.0.0.1:${port}/start": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
    expect(counted).toBe(1);
  });
});
