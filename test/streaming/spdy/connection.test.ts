import { afterEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import { once } from 'node:events';
import { SpdyConnection, type SpdyStream } from '../../../src/streaming/spdy/connection.js';
import { encodeFrame, type Frame } from '../../../src/streaming/spdy/frames.js';
import { until } from '../../e2e/helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A real TCP pair with a SPDY connection on each end. */
async function pair(): Promise<{
  client: SpdyConnection;
  server: SpdyConnection;
  serverSocket: net.Socket;
  clientSocket: net.Socket;
}> {
  const { clientSocket, serverSocket } = await sockets();
  return {
    client: new SpdyConnection(clientSocket, { server: false }),
    server: new SpdyConnection(serverSocket, { server: true }),
    serverSocket,
    clientSocket,
  };
}

/** A real TCP pair. */
async function sockets(): Promise<{ serverSocket: net.Socket; clientSocket: net.Socket }> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const accepted = once(srv, 'connection');
  const clientSocket = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
  const [serverSocket] = (await accepted) as [net.Socket];
  cleanups.push(() => {
    clientSocket.destroy();
    serverSocket.destroy();
    srv.close();
  });
  return { clientSocket, serverSocket };
}

// Events, not for-await: async iteration destroys a Duplex when it ends, closing our write side too.
const collect = (s: SpdyStream) =>
  new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('error', reject);
  });

describe('SpdyConnection', () => {
  it('opens streams with headers, replies, carries data both ways and half-closes', async () => {
    const { client, server } = await pair();
    server.on('stream', async (s: SpdyStream) => {
      s.reply([['x-ok', '1']]);
      const got = await collect(s);
      s.end(`echo:${s.header('streamtype')}:${got.toString()}`);
    });
    const c = client.openStream([
      ['streamtype', 'stdin'],
      ['port', '80'],
    ]);
    const replied = once(c, 'reply');
    c.end('hello');
    const [headers] = (await replied) as [Map<string, string[]>];
    expect(headers.get('x-ok')).toEqual(['1']);
    expect((await collect(c)).toString()).toBe('echo:stdin:hello');
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = client.openStream([['streamtype', `s${i}`]]);
      ids.push(s.id);
      s.end();
      await collect(s);
    }
    expect(ids).toEqual([3, 5, 7]);
  });

  it('answers PING and resets streams', async () => {
    const { client, server } = await pair();
    await client.ping();
    await server.ping();
    const got = once(server, 'stream');
    const c = client.openStream([['streamtype', 'data']]);
    const [s] = (await got) as [SpdyStream];
    const reset = once(s, 'reset');
    c.reset(5);
    expect((await reset)[0]).toBe(5);
  });

  it('moves 32 MiB without loss, paced by a slow reader (through TCP: neither side asks for flow control, as spdystream)', async () => {
    const { client, server } = await pair();
    const chunk = Buffer.alloc(1 << 20);
    for (let i = 0; i < chunk.length; i++) chunk[i] = i % 251;
    server.on('stream', async (s: SpdyStream) => {
      s.reply();
      for (let i = 0; i < 32; i++) if (!s.write(chunk)) await once(s, 'drain');
      s.end();
    });
    const c = client.openStream([['streamtype', 'stdout']]);
    c.end();
    let total = 0;
    let ok = true;
    let paused = false;
    for await (const part of c) {
      const b = part as Buffer;
      for (let i = 0; i < b.length; i += 4099) if (b[i] !== ((total + i) % (1 << 20)) % 251) ok = false;
      total += b.length;
      if (!paused && total > 4 << 20) {
        paused = true;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    expect([total, ok]).toEqual([32 << 20, true]);
    expect([server.peerDoesFlowControl, client.peerDoesFlowControl]).toEqual([false, false]);
  });

  it('delivers the last data and the end of a stream when the peer closes the connection right behind them', async () => {
    // Go's remotecommand server (containerd's streaming server) writes the status, the FINs and
    // GOAWAY, then closes the TCP connection: all of it can arrive in one read.
    const { client, server, serverSocket } = await pair();
    const accepted = once(server, 'stream');
    const finned = client.openStream([['streamtype', 'error']]);
    const open = client.openStream([['streamtype', 'stdout']]);
    const [first] = (await accepted) as [SpdyStream];
    const got = [collect(finned), collect(open)];
    const closed = once(client, 'close');
    serverSocket.end(
      Buffer.concat([
        encodeFrame({ type: 'data', streamId: first.id, flags: 0, data: Buffer.from('{"status":"Success"}') }),
        encodeFrame({ type: 'data', streamId: first.id, flags: 1, data: Buffer.alloc(0) }),
        encodeFrame({ type: 'data', streamId: open.id, flags: 0, data: Buffer.from('last bytes') }),
        encodeFrame({ type: 'goaway', lastGoodStreamId: 0, status: 0 }),
      ]),
    );
    // The FINned stream ends after its data; the other ends too (EOF at the close, as spdystream's reads).
    expect((await Promise.all(got)).map(String)).toEqual(['{"status":"Success"}', 'last bytes']);
    await closed;
  });

  it('keeps what a stream received before RST_STREAM readable, ends it, and drops later writes without an error', async () => {
    // containerd's streaming server: the status on the error stream, then RST_STREAM (CANCEL) on it.
    const { client, server, serverSocket } = await pair();
    const accepted = once(server, 'stream');
    const c = client.openStream([['streamtype', 'error']]);
    const [s] = (await accepted) as [SpdyStream];
    const got = collect(c);
    const errors: Error[] = [];
    c.on('error', (e: Error) => errors.push(e));
    const reset = new Promise<[number, unknown]>((resolve) =>
      c.once('reset', (status: number) => c.write('late', (err) => resolve([status, err ?? 'none']))),
    );
    serverSocket.write(
      Buffer.concat([
        encodeFrame({ type: 'data', streamId: s.id, flags: 0, data: Buffer.from('{"status":"Success"}') }),
        encodeFrame({ type: 'rst_stream', streamId: s.id, status: 5 }),
      ]),
    );
    expect(await reset).toEqual([5, 'none']); // the write after the reset was dropped, no error
    expect((await got).toString()).toBe('{"status":"Success"}');
    expect(errors).toEqual([]);
    expect(client.streamCount).toBe(0);
  });

  it("sends no WINDOW_UPDATE to a peer that does not ask for flow control (Go's spdystream), and bounds a stream's unread data by pausing the socket", async () => {
    // The peer is a raw socket that, like spdystream, never announces flow control and ignores windows.
    const { clientSocket, serverSocket } = await sockets();
    const client = new SpdyConnection(clientSocket, { server: false });
    const seen: Buffer[] = [];
    serverSocket.on('data', (d: Buffer) => seen.push(d));
    const s = client.openStream([['streamtype', 'stdout']]);
    s.end();
    s.pause(); // a reader that falls behind
    const chunk = Buffer.alloc(16 * 1024, 7);
    const frames = Buffer.concat(
      Array.from({ length: 256 }, () => encodeFrame({ type: 'data', streamId: s.id, flags: 0, data: chunk })),
    ); // 4 MiB
    serverSocket.write(
      Buffer.concat([frames, encodeFrame({ type: 'data', streamId: s.id, flags: 1, data: Buffer.alloc(0) })]),
    );
    await until(() => s.readableLength >= 128 * 1024, 5000, 'the bound reached');
    await new Promise((r) => setTimeout(r, 300));
    // Held at the bound (128 KiB) plus at most what one socket read had already decoded.
    expect(s.readableLength).toBeLessThanOrEqual(256 * 1024);
    const all = collect(s);
    s.resume();
    expect((await all).length).toBe(4 << 20);
    const { FrameDecoder } = await import('../../../src/streaming/spdy/frames.js');
    const sent = new FrameDecoder().push(Buffer.concat(seen)).frames.map((f) => f.type);
    expect(sent).toEqual(['syn_stream', 'data']); // the stream and its FIN: no WINDOW_UPDATE
  });

  it('follows the windows of a peer that asks for flow control, and grants it more as the reader consumes', async () => {
    const { clientSocket, serverSocket } = await sockets();
    const client = new SpdyConnection(clientSocket, { server: false });
    const { FrameDecoder, SettingsId } = await import('../../../src/streaming/spdy/frames.js');
    const decoder = new FrameDecoder();
    const seen: Frame[] = [];
    serverSocket.on('data', (d: Buffer) => seen.push(...decoder.push(d).frames));
    // The peer's window for our sending is 16 KiB; it sends 256 KiB on the stream we open.
    serverSocket.write(
      encodeFrame({
        type: 'settings',
        flags: 0,
        entries: [{ flags: 0, id: SettingsId.INITIAL_WINDOW_SIZE, value: 16 * 1024 }],
      }),
    );
    // A PING after the SETTINGS: its echo says the client has taken the settings (frames are read in order).
    serverSocket.write(encodeFrame({ type: 'ping', id: 2 }));
    await until(() => seen.some((f) => f.type === 'ping' && f.id === 2), 5000, 'the ping echoed');
    const s = client.openStream([['streamtype', 'stdin']]);
    const got = collect(s);
    const chunk = Buffer.alloc(16 * 1024, 1);
    serverSocket.write(
      Buffer.concat(
        Array.from({ length: 16 }, () => encodeFrame({ type: 'data', streamId: s.id, flags: 0, data: chunk })),
      ),
    );
    s.write(Buffer.alloc(40 * 1024, 2));
    const sentData = () =>
      seen.filter((f) => f.type === 'data').reduce((n, f) => n + (f.type === 'data' ? f.data.length : 0), 0);
    await until(() => sentData() >= 16 * 1024, 5000, 'the first window sent');
    await new Promise((r) => setTimeout(r, 200));
    expect(sentData()).toBe(16 * 1024); // held at the peer's window
    serverSocket.write(encodeFrame({ type: 'window_update', streamId: s.id, delta: 64 * 1024 }));
    await until(() => sentData() >= 40 * 1024, 5000, 'the rest sent');
    expect(sentData()).toBe(40 * 1024);
    serverSocket.write(encodeFrame({ type: 'data', streamId: s.id, flags: 1, data: Buffer.alloc(0) }));
    expect((await got).length).toBe(256 * 1024);
    const granted = seen.reduce((n, f) => n + (f.type === 'window_update' && f.streamId === s.id ? f.delta : 0), 0);
    expect(granted).toBe(256 * 1024);
  });

  it('destroys a stream the peer is gone from once its reader has had a grace to take the rest', async () => {
    const { clientSocket, serverSocket } = await sockets();
    const client = new SpdyConnection(clientSocket, { server: false, drainGraceMs: 100 });
    const s = client.openStream([['streamtype', 'data']]);
    s.pause(); // its reader never comes back
    serverSocket.end(
      Buffer.concat([
        encodeFrame({ type: 'data', streamId: s.id, flags: 0, data: Buffer.from('unread') }),
        encodeFrame({ type: 'rst_stream', streamId: s.id, status: 5 }),
      ]),
    );
    await once(s, 'close');
    expect([s.readableEnded, s.destroyed]).toEqual([false, true]);
  });

  it('answers a malformed frame with GOAWAY and closes, without throwing', async () => {
    const { server, clientSocket } = await pair();
    const errors: string[] = [];
    server.on('protocolError', (m: string) => errors.push(m));
    const received: Buffer[] = [];
    clientSocket.on('data', (d: Buffer) => received.push(d));
    clientSocket.write(encodeFrame({ type: 'ping', id: 1 }));
    clientSocket.write(Buffer.from('8003000300000004ffffffff', 'hex')); // RST_STREAM with a bad length
    await once(clientSocket, 'close');
    expect(errors[0]).toMatch(/RST_STREAM length/);
    const all = Buffer.concat(received).toString('hex');
    expect(all.startsWith('8003000600000004' + '00000001')).toBe(true); // the PING was answered first
    expect(all).toContain('8003000700000008'); // then GOAWAY
  });

  it('resets a stream opened with an id of the wrong parity or reused', async () => {
    const { clientSocket } = await pair();
    const got: Buffer[] = [];
    clientSocket.on('data', (d: Buffer) => got.push(d));
    const { HeaderCodec } = await import('../../../src/streaming/spdy/header-block.js');
    const codec = new HeaderCodec();
    const syn = (id: number) =>
      encodeFrame({
        type: 'syn_stream',
        streamId: id,
        associatedStreamId: 0,
        priority: 0,
        flags: 0,
        headerBlock: codec.compress([['streamtype', 'x']]),
      });
    clientSocket.write(Buffer.concat([syn(2), syn(5), syn(5), syn(3)]));
    const { FrameDecoder } = await import('../../../src/streaming/spdy/frames.js');
    const answered = () => new FrameDecoder().push(Buffer.concat(got)).frames;
    await until(() => answered().length >= 3, 5000, 'the three refusals');
    await new Promise((r) => setTimeout(r, 100));
    const frames = answered();
    expect(frames.map((f) => (f.type === 'rst_stream' ? `rst ${f.streamId} ${f.status}` : f.type))).toEqual([
      'rst 2 1',
      'rst 5 1',
      'rst 3 1',
    ]);
  });

  it('refuses a header block that inflates past 1 MiB, without inflating the rest (regression: a 255 KB block became a 256 MiB value)', async () => {
    const { server, clientSocket } = await pair();
    const { spdy3Dictionary } = await import('../../../src/streaming/spdy/dictionary.js');
    const { MAX_HEADER_BLOCK_BYTES } = await import('../../../src/streaming/spdy/header-block.js');
    // One header whose value is 256 MiB of "a", deflated a MiB at a time (the source is never whole in memory).
    const zlib = await import('node:zlib');
    const deflate = zlib.createDeflate({ dictionary: spdy3Dictionary, level: 9 });
    const parts: Buffer[] = [];
    deflate.on('data', (c: Buffer) => parts.push(c));
    const head = Buffer.alloc(4 + 4 + 1 + 4);
    head.writeUInt32BE(1, 0);
    head.writeUInt32BE(1, 4);
    head.write('x', 8);
    head.writeUInt32BE(256 << 20, 9);
    deflate.write(head);
    const mib = Buffer.alloc(1 << 20, 'a');
    for (let i = 0; i < 256; i++) deflate.write(mib);
    await new Promise((r) => deflate.flush(zlib.constants.Z_SYNC_FLUSH, () => r(undefined)));
    const block = Buffer.concat(parts);
    expect(block.length).toBeLessThan(1 << 20);
    const rssBefore = process.memoryUsage().rss;
    const err = once(server, 'protocolError');
    clientSocket.write(
      encodeFrame({
        type: 'syn_stream',
        streamId: 1,
        associatedStreamId: 0,
        priority: 0,
        flags: 0,
        headerBlock: block,
      }),
    );
    expect(String((await err)[0])).toBe(
      `bad header block: header block inflates to more than ${MAX_HEADER_BLOCK_BYTES} bytes`,
    );
    expect((process.memoryUsage().rss - rssBefore) / 2 ** 20).toBeLessThan(32);
  });

  it('refuses streams past MAX_OPEN_STREAMS on one connection (REFUSED_STREAM) and keeps serving the open ones', async () => {
    const { MAX_OPEN_STREAMS } = await import('../../../src/streaming/spdy/connection.js');
    const { server, clientSocket } = await pair();
    const opened: SpdyStream[] = [];
    server.on('stream', (st: SpdyStream) => opened.push(st));
    const got: Buffer[] = [];
    clientSocket.on('data', (d: Buffer) => got.push(d));
    const { HeaderCodec } = await import('../../../src/streaming/spdy/header-block.js');
    const codec = new HeaderCodec();
    const syn = (id: number) =>
      encodeFrame({
        type: 'syn_stream',
        streamId: id,
        associatedStreamId: 0,
        priority: 0,
        flags: 0,
        headerBlock: codec.compress([['streamtype', 'x']]),
      });
    const ids = Array.from({ length: MAX_OPEN_STREAMS + 2 }, (_, i) => 2 * i + 1);
    clientSocket.write(Buffer.concat(ids.map(syn)));
    await until(() => opened.length === MAX_OPEN_STREAMS && got.length > 0, 10_000, 'streams');
    await new Promise((r) => setTimeout(r, 100));
    const { FrameDecoder } = await import('../../../src/streaming/spdy/frames.js');
    const frames = new FrameDecoder().push(Buffer.concat(got)).frames;
    expect(frames.map((f) => (f.type === 'rst_stream' ? `rst ${f.streamId} ${f.status}` : f.type))).toEqual(
      ids.slice(MAX_OPEN_STREAMS).map((id) => `rst ${id} 3`),
    );
    expect(opened.length).toBe(MAX_OPEN_STREAMS);
  });

  it('rejects a header block that does not inflate', async () => {
    const { server, clientSocket } = await pair();
    const err = once(server, 'protocolError');
    clientSocket.write(
      encodeFrame({
        type: 'syn_stream',
        streamId: 1,
        associatedStreamId: 0,
        priority: 0,
        flags: 0,
        headerBlock: Buffer.from('not zlib at all'),
      }),
    );
    expect(String((await err)[0])).toMatch(/bad header block/);
  });
});

describe('SpdyConnection under random input (fuzz)', () => {
  it('never throws and always ends up closed or alive, for 300 random byte streams', async () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      for (let i = 0; i < 300; i++) {
        const { PassThrough } = await import('node:stream');
        const sock = new PassThrough();
        const conn = new SpdyConnection(sock, { server: true });
        conn.on('stream', (s: SpdyStream) => {
          s.reply();
          s.on('data', () => undefined);
        });
        conn.on('protocolError', () => undefined);
        // Valid-looking frame starts mixed with garbage.
        const parts: Buffer[] = [];
        for (let j = 0; j < 1 + Math.floor(rnd() * 6); j++) {
          if (rnd() < 0.5) parts.push(encodeFrame({ type: 'ping', id: Math.floor(rnd() * 100) }));
          parts.push(
            Buffer.from(
              Array.from({ length: Math.floor(rnd() * 40) }, (_, k) =>
                k === 0 && rnd() < 0.5 ? 0x80 : k === 1 ? 3 : Math.floor(rnd() * 256),
              ),
            ),
          );
        }
        sock.write(Buffer.concat(parts));
        await new Promise((r) => setImmediate(r));
        sock.destroy();
      }
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
  });
});
