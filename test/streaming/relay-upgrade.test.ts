/**
 * relayUpgrade (the 10250 → runtime streaming relay) when the runtime's side fails: what the
 * relay had already read and queued for a slow client still reaches it, then the end; a client
 * that never reads is let go after the grace.
 */
import net from 'node:net';
import type { IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { relayUpgrade } from '../../src/streaming/upgrade.js';
import { pooledReads } from '../../src/streaming/pooled-reads.js';
import { endThenDestroy } from '../../src/streaming/drain-then-destroy.js';

const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A runtime streaming server that answers the upgrade with `bytes` bytes, then resets the connection. */
async function resettingRuntime(bytes: number): Promise<number> {
  const server = net.createServer((s) => {
    s.on('error', () => undefined);
    s.once('data', () => {
      s.write(Buffer.alloc(bytes, 0x61), () => setTimeout(() => s.resetAndDestroy(), 100));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

/** A client connection that takes each write only after `delayMs` (a slow network): writes queue in it. */
function slowClient(delayMs: number) {
  let received = 0;
  const client = new Duplex({
    highWaterMark: 1,
    read() {},
    write(chunk: Buffer, _enc, cb) {
      setTimeout(() => {
        received += chunk.length;
        cb();
      }, delayMs);
    },
  });
  return { client, received: () => received };
}

const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setTimeout(r, 5));
};

const upgradeRequest = {
  method: 'GET',
  rawHeaders: ['Upgrade', 'SPDY/3.1', 'Connection', 'Upgrade'],
} as unknown as IncomingMessage;

describe('relayUpgrade', () => {
  it("writes everything it read to a slow client, then ends it, when the runtime's side resets", async () => {
    const port = await resettingRuntime(64 * 1024);
    const { client, received } = slowClient(40);
    const reads = pooledReads();
    const upstream = net.connect({ port, host: '127.0.0.1', onread: reads.onread });
    await new Promise((r) => upstream.once('connect', r));
    relayUpgrade(
      upgradeRequest,
      Buffer.alloc(0),
      client,
      upstream,
      { path: '/exec/x', host: `127.0.0.1:${port}` },
      reads,
    );
    const upstreamError = new Promise((r) => upstream.once('error', r));
    // 'finish' once everything queued was taken; a close before it is a destroy that dropped some.
    const outcome = new Promise((r) => {
      client.once('finish', () => r('finished'));
      client.once('close', () => r('destroyed before finishing'));
    });
    expect(await outcome).toBe('finished');
    expect(received()).toBe(64 * 1024);
    expect(((await upstreamError) as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    await until(() => client.destroyed);
  });

  it('endThenDestroy lets go of a destination that never takes what is queued, after the grace', async () => {
    const stuck = new Duplex({ read() {}, write() {} });
    stuck.write('never taken');
    endThenDestroy(stuck, 50);
    expect(stuck.destroyed).toBe(false);
    await new Promise((r) => stuck.once('close', r));
    expect(stuck.destroyed).toBe(true);
  });
});
