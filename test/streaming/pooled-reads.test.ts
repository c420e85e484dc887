import net from 'node:net';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { pooledReads } from '../../src/streaming/pooled-reads.js';

const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A server that sends `mib` MiB of a counting pattern, then ends; resolves its port and the data's digest. */
async function source(mib: number): Promise<{ port: number; digest: string }> {
  const data = Buffer.alloc(mib << 20);
  for (let i = 0; i < data.length; i += 4) data.writeUInt32LE(i >>> 2, i);
  const server = net.createServer((s) => s.on('error', () => undefined).end(data));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, digest: createHash('sha256').update(data).digest('hex') };
}

/** A destination that hashes what it gets and completes each write after `delayMs` (a slow client). */
function slowSink(delayMs: number) {
  const hash = createHash('sha256');
  let pending = 0;
  let maxPending = 0;
  const sink = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      pending++;
      maxPending = Math.max(maxPending, pending);
      setTimeout(() => {
        pending--;
        cb();
      }, delayMs);
    },
  });
  return { sink, digest: () => hash.digest('hex'), maxPending: () => maxPending };
}

describe('pooledReads', () => {
  it('carries every byte in order through a few reused buffers, however slow the destination', async () => {
    const src = await source(8);
    const reads = pooledReads(4, 16 * 1024);
    const { sink, digest } = slowSink(1);
    const sock = net.connect({ port: src.port, host: '127.0.0.1', onread: reads.onread });
    reads.pipeTo(sink, () => sock.resume());
    await new Promise<void>((resolve) => {
      sock.on('end', () => sink.end(resolve));
      sock.resume();
    });
    expect(digest()).toBe(src.digest);
    // 8 MiB in 16 KiB reads is 512 reads: the pool never grew past its bound.
    expect(reads.allocated()).toBeLessThanOrEqual(5);
  });

  it('pauses reading while `buffers` writes are in flight (backpressure), then resumes', async () => {
    const src = await source(2);
    const reads = pooledReads(2, 16 * 1024);
    let inFlight = 0;
    let maxInFlight = 0;
    const callbacks: (() => void)[] = [];
    const sink = new Writable({
      highWaterMark: 1,
      writev(chunks, cb) {
        inFlight += chunks.length;
        maxInFlight = Math.max(maxInFlight, inFlight);
        callbacks.push(() => {
          inFlight -= chunks.length;
          cb();
        });
      },
    });
    const sock = net.connect({ port: src.port, host: '127.0.0.1', onread: reads.onread });
    let resumes = 0;
    reads.pipeTo(sink, () => {
      resumes++;
      sock.resume();
    });
    const ended = new Promise<void>((r) => sock.on('end', r));
    sock.resume();
    // Release the destination's writes slowly until the source has ended.
    let done = false;
    void ended.then(() => (done = true));
    while (!done) {
      await new Promise((r) => setTimeout(r, 2));
      callbacks.splice(0).forEach((f) => f());
    }
    expect(resumes).toBeGreaterThan(0);
    expect(maxInFlight).toBeLessThanOrEqual(2);
    expect(reads.allocated()).toBeLessThanOrEqual(3);
  });

  it('stops reading into a destination that is gone', async () => {
    const src = await source(4);
    const reads = pooledReads();
    const { sink } = slowSink(0);
    sink.destroy();
    const sock = net.connect({ port: src.port, host: '127.0.0.1', onread: reads.onread });
    reads.pipeTo(sink, () => sock.resume());
    sock.resume();
    await new Promise((r) => setTimeout(r, 100));
    expect(sock.bytesRead).toBeLessThanOrEqual(16 * 1024 * 2);
    sock.destroy();
  });
});
