import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import { StreamingServer } from '../../src/process-runtime/streaming-server.js';
import { silentLogger } from '../../src/lib/logger.js';
import { isCode } from '../../src/lib/errors.js';

const servers: StreamingServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** Sends an upgrade to `url`; resolves the status code the server answered with. */
function upgrade(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers: { Connection: 'Upgrade', Upgrade: 'websocket' } });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode!);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('StreamingServer tokens', () => {
  it('are single-use: the second use of a URL is refused', async () => {
    const s = new StreamingServer({ logger: silentLogger });
    servers.push(s);
    await s.start();
    let served = 0;
    const url = s.register({
      kind: 'exec',
      serve: async (_req, socket) => {
        served++;
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      },
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]+$/);
    expect(await upgrade(url)).toBe(101);
    expect(await upgrade(url)).toBe(404);
    expect(await upgrade(url.replace('/exec/', '/attach/'))).toBe(404);
    expect(served).toBe(1);
  });
  it('expire after their TTL and are bounded in number', async () => {
    const s = new StreamingServer({ logger: silentLogger, tokenTtlMs: 50, maxInFlight: 3 });
    servers.push(s);
    await s.start();
    const serve = async () => undefined;
    const first = s.register({ kind: 'portforward', serve });
    s.register({ kind: 'portforward', serve });
    s.register({ kind: 'portforward', serve });
    let err: unknown;
    try {
      s.register({ kind: 'portforward', serve });
    } catch (e) {
      err = e;
    }
    expect(isCode(err, 'TooManyRequests')).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(await upgrade(first)).toBe(404);
    s.register({ kind: 'portforward', serve }); // expired ones no longer count
    expect(s.inFlight).toBe(1);
  });
});

describe('StreamingServer idle timeout (streamingConnectionIdleTimeout)', () => {
  it('closes a session that has been idle for the timeout, not one that talks', async () => {
    const s = new StreamingServer({ logger: silentLogger, idleTimeoutMs: 300 });
    servers.push(s);
    await s.start();
    const serve = async (_req: http.IncomingMessage, socket: import('node:stream').Duplex) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(d)); // echo
    };
    const open = (url: string) =>
      new Promise<import('node:stream').Duplex>((resolve) => {
        http
          .request(url, { headers: { Connection: 'Upgrade', Upgrade: 'websocket' } })
          .on('upgrade', (_res, socket) => resolve(socket))
          .end();
      });
    const idle = await open(s.register({ kind: 'exec', serve }));
    const busy = await open(s.register({ kind: 'exec', serve }));
    let idleClosed = false;
    let busyClosed = false;
    idle.on('close', () => (idleClosed = true));
    busy.on('close', () => (busyClosed = true));
    busy.on('data', () => undefined);
    for (let i = 0; i < 8; i++) {
      busy.write('x');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect([idleClosed, busyClosed]).toEqual([true, false]);
    busy.destroy();
  });
});
