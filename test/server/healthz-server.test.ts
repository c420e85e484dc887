/**
 * The healthz port's plain server: ping/log before the agent exists, the agent's checks once
 * set (a failing one → 500 with reasons withheld in the list, given on /healthz/<name>), 404
 * elsewhere as Go's mux, HEAD without a body, and a bad request line answered 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startHealthzServer, type HealthzServer } from '../../src/server/healthz-server.js';
import { silentLogger } from '../../src/lib/logger.js';

let hz: HealthzServer;
let base: string;
beforeAll(async () => {
  hz = await startHealthzServer({ port: 0, host: '127.0.0.1', logger: silentLogger });
  base = `http://127.0.0.1:${((hz.server as unknown as net.Server).address() as AddressInfo).port}`;
});
afterAll(async () => {
  await hz.close();
});

const get = async (path: string, method = 'GET') => {
  const r = await fetch(base + path, { method });
  return { status: r.status, body: await r.text(), type: r.headers.get('content-type') };
};

describe('healthz server', () => {
  it('serves ping and log before the agent exists', async () => {
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });
    expect((await get('/healthz?verbose')).body).toBe('[+]ping ok\n[+]log ok\nhealthz check passed\n');
    expect((await get('/healthz/ping')).body).toBe('ok');
    expect((await get('/healthz/syncloop')).status).toBe(404);
    expect(await get('/metrics')).toMatchObject({ status: 404, body: '404 page not found\n' });
    expect(await get('/healthz', 'HEAD')).toMatchObject({ status: 200, body: '' });
  });

  it('adds the agent checks once set', async () => {
    let err: string | undefined = 'sync loop stalled';
    hz.setChecks(() => [{ name: 'syncloop', check: () => err }]);
    expect(await get('/healthz')).toMatchObject({
      status: 500,
      body: '[+]ping ok\n[+]log ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n',
    });
    expect(await get('/healthz/syncloop')).toMatchObject({
      status: 500,
      body: 'internal server error: sync loop stalled\n',
    });
    err = undefined;
    expect((await get('/healthz')).body).toBe('ok');
    expect((await get('/healthz/syncloop')).body).toBe('ok');
  });

  it('answers a malformed escape or URL with 400 and keeps serving', async () => {
    expect(await get('/healthz/%E0%A4')).toMatchObject({ status: 400, body: '400 Bad Request\n' });
    const port = Number(new URL(base).port);
    const raw = await new Promise<string>((resolve) => {
      let buf = '';
      const s = net.connect({ host: '127.0.0.1', port }, () =>
        s.write('GET http://[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      );
      s.on('data', (d) => {
        buf += d.toString();
      });
      s.on('close', () => resolve(buf));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect((await get('/healthz')).status).toBe(200);
  });

  it('answers garbage with 400', async () => {
    const port = Number(new URL(base).port);
    const reply = await new Promise<string>((resolve) => {
      let buf = '';
      const s = net.connect({ host: '127.0.0.1', port }, () => s.write('\x00\x01 nonsense\r\n\r\n'));
      s.on('data', (d) => {
        buf += d.toString();
      });
      s.on('close', () => resolve(buf));
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
  });
});
