/** Streaming clients for tests: a `ws` channel client and a SPDY/3.1 client built on our connection. */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { WebSocket } from 'ws';
import { SpdyConnection, type SpdyStream } from '../../src/streaming/spdy/connection.js';
import { decodeChannelFrame, encodeChannelFrame, isBase64Protocol } from '../../src/streaming/ws-channel.js';

/** Client TLS material. */
export interface ClientPki {
  ca: string;
  cert: string;
  key: string;
}
const tlsOf = (p: ClientPki) => ({ ca: readFileSync(p.ca), cert: readFileSync(p.cert), key: readFileSync(p.key) });

/** A WebSocket to the kubelet with the client's certificate (no compression, as kubectl's). */
export function clientWebSocket(url: string, protocols: string[], pki: ClientPki): WebSocket {
  return new WebSocket(url, protocols, { ...tlsOf(pki), perMessageDeflate: false });
}

/**
 * Sends `frame` over an open `ws` as fast as the server takes it, with up to 8 MiB queued in the client, until `total`
 * bytes are sent or `goOn` (given the bytes the server has taken so far) says to stop, every 20 ms; answers the bytes
 * the server took.
 */
export async function floodWebSocket(
  ws: WebSocket,
  frame: Buffer,
  total: number,
  goOn: (accepted: number) => boolean,
): Promise<number> {
  let sent = 0;
  const accepted = () => sent - ws.bufferedAmount;
  while (sent < total && goOn(accepted())) {
    while (ws.bufferedAmount < 8 << 20 && sent < total) {
      ws.send(frame);
      sent += frame.length;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return accepted();
}

/** What a channel session produced. */
export interface ChannelResult {
  protocol: string;
  channels: Map<number, Buffer>;
  frames: { ch: number; len: number }[];
}

/**
 * Runs a WebSocket channel session: sends `input` frames (channel, data) after the first message,
 * collects everything per channel until the server closes.
 */
export function wsSession(
  url: string,
  protocols: string[],
  pki: ClientPki,
  o: { input?: [number, Buffer | string][]; onMessage?: (ch: number, data: Buffer, ws: WebSocket) => void } = {},
): Promise<ChannelResult> {
  return new Promise((resolve, reject) => {
    const ws = clientWebSocket(url, protocols, pki);
    const parts = new Map<number, Buffer[]>();
    const frames: { ch: number; len: number }[] = [];
    let sent = false;
    ws.on('message', (raw: Buffer, isBinary) => {
      const frame = decodeChannelFrame(raw, isBinary, true);
      if (!frame) return;
      const { ch, data } = frame;
      frames.push({ ch, len: data.length });
      if (!parts.has(ch)) parts.set(ch, []);
      parts.get(ch)!.push(data);
      o.onMessage?.(ch, data, ws);
      if (!sent) {
        sent = true;
        for (const [c, d] of o.input ?? [])
          ws.send(encodeChannelFrame(c, Buffer.from(d), isBase64Protocol(ws.protocol)).frame);
      }
    });
    ws.on('close', () =>
      resolve({ protocol: ws.protocol, channels: new Map([...parts].map(([c, p]) => [c, Buffer.concat(p)])), frames }),
    );
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, res) => {
      let b = '';
      res.on('data', (d) => (b += d));
      res.on('end', () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}: ${b}`), {
            status: res.statusCode,
            body: b,
            headers: res.headers,
          }),
        ),
      );
    });
  });
}

/**
 * A raw upgrade over HTTPS (plain HTTP without `pki`: a runtime's own streaming server): resolves
 * the status line, headers and the socket positioned after them.
 */
export function rawUpgrade(
  host: string,
  port: number,
  path: string,
  headers: [string, string][],
  pki: ClientPki | undefined,
  method = 'POST',
): Promise<{ status: number; headers: string; body: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const request = () =>
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`,
      );
    const socket = pki
      ? tls.connect({ host, port, ...tlsOf(pki), servername: 'localhost' }, request)
      : net.connect(port, host, request);
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      const head = buf.subarray(0, end).toString('latin1');
      const rest = buf.subarray(end + 4);
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0);
      if (status === 101) {
        // Held until the caller takes the socket: a record decrypted in the same read (the
        // server's first SPDY frame) would otherwise be emitted to no listener and lost.
        socket.pause();
        if (rest.length) socket.unshift(rest);
        resolve({ status, headers: head, body: '', socket });
        return;
      }
      let body = rest.toString('utf8');
      socket.on('data', (x: Buffer) => (body += x.toString('utf8')));
      socket.on('end', () => resolve({ status, headers: head, body, socket }));
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}

/** Collects a SPDY stream's data until FIN. */
export const collectStream = (s: SpdyStream) =>
  new Promise<Buffer>((resolve) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('close', () => resolve(Buffer.concat(parts)));
  });

/** Runs a SPDY remote-command session as Go clients do: one stream per channel. */
export async function spdyExec(
  host: string,
  port: number,
  path: string,
  pki: ClientPki | undefined,
  o: { protocols?: string[]; streams: string[]; stdin?: string; onData?: (stream: string, chunk: Buffer) => void },
): Promise<{ status: number; protocol?: string; out: Record<string, string> }> {
  const up = await rawUpgrade(
    host,
    port,
    path,
    [
      ['Connection', 'Upgrade'],
      ['Upgrade', 'SPDY/3.1'],
      ...(o.protocols ?? ['v4.channel.k8s.io']).map((p) => ['X-Stream-Protocol-Version', p] as [string, string]),
    ],
    pki,
  );
  if (up.status !== 101) return { status: up.status, out: { body: up.body, headers: up.headers } };
  const protocol = /X-Stream-Protocol-Version: (\S+)/i.exec(up.headers)?.[1];
  const conn = new SpdyConnection(up.socket, { server: false });
  const out: Record<string, string> = {};
  const reads: Promise<void>[] = [];
  for (const type of o.streams) {
    const s = conn.openStream([['streamtype', type]]);
    if (type === 'stdin') {
      if (o.stdin !== undefined) s.end(o.stdin);
      continue;
    }
    s.end();
    // With onData the output is handed over and not kept (the benches count it).
    const onData = o.onData;
    reads.push(
      onData
        ? new Promise<void>((resolve, reject) => {
            s.on('data', (d: Buffer) => onData(type, d));
            s.on('end', resolve);
            s.on('error', reject);
          })
        : collectStream(s).then((b) => {
            out[type] = b.toString('utf8');
          }),
    );
  }
  await Promise.all(reads);
  up.socket.destroy();
  return { status: 101, protocol, out };
}

const randomDelay = (maxMs: number) => new Promise((r) => setTimeout(r, Math.floor(Math.random() * maxMs)));

/**
 * A WebSocket session to `url` that the client drops (terminates its TCP connection) after up to `maxMs`; `send` once
 * open.
 */
export function droppedWebSocket(
  url: string,
  pki: ClientPki,
  protocol: string,
  maxMs: number,
  send?: Buffer,
): Promise<void> {
  return new Promise((resolve) => {
    const ws = clientWebSocket(url, [protocol], pki);
    ws.on('error', () => resolve());
    ws.on('close', () => resolve());
    ws.on('open', () => {
      if (send) ws.send(send);
      void randomDelay(maxMs).then(() => ws.terminate());
    });
  });
}

/** A SPDY session to `path` on 127.0.0.1:`port` with `streams`, its socket destroyed after up to `maxMs`. */
export async function droppedSpdy(
  port: number,
  pki: ClientPki,
  path: string,
  streams: string[],
  maxMs: number,
): Promise<void> {
  const up = await rawUpgrade(
    '127.0.0.1',
    port,
    path,
    [
      ['Connection', 'Upgrade'],
      ['Upgrade', 'SPDY/3.1'],
      ['X-Stream-Protocol-Version', 'v4.channel.k8s.io'],
    ],
    pki,
  ).catch(() => undefined);
  if (!up || up.status !== 101) return;
  up.socket.on('error', () => undefined);
  const connection = new SpdyConnection(up.socket, { server: false });
  for (const type of streams) {
    const stream = connection.openStream([['streamtype', type]]);
    stream.on('error', () => undefined);
    stream.resume();
    if (type !== 'stdin') stream.end();
  }
  await randomDelay(maxMs);
  up.socket.destroy();
}
