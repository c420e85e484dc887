/**
 * Port-forward over SPDY/3.1 (`portforward.k8s.io`): per forwarded connection the client opens an
 * `error` stream and a `data` stream carrying `port` and `requestid` headers. Once both streams of
 * a request are there (30 s at most) we dial the port and copy bytes both ways; a dial error goes
 * as text on the error stream. Old clients send no requestid: it is derived from the stream ids
 * (error: id, data: id − 2), as upstream does.
 */
import type { Socket } from 'node:net';
import type { SpdyConnection, SpdyStream } from '../spdy/connection.js';

/** Dials a port inside the pod; rejects with a message for the client. */
export type PortDialer = (port: number) => Promise<Socket>;

/** How long the client has to open the second stream of a pair. */
export const PAIR_TIMEOUT_MS = 30_000;

/** The request id of a stream (pure). */
export function requestIdOf(s: { id: number; header(name: string): string | undefined }): string {
  const id = s.header('requestid');
  if (id) return id;
  return String(s.header('streamtype') === 'data' ? s.id - 2 : s.id);
}

/** Serves port-forward streams on `conn` until it closes. */
export function serveSpdyPortForward(
  conn: SpdyConnection,
  o: { dial: PortDialer; describe: (port: number) => string; pairTimeoutMs?: number },
): Promise<void> {
  const pairs = new Map<string, { error?: SpdyStream; data?: SpdyStream; timer: NodeJS.Timeout }>();
  conn.on('stream', (s: SpdyStream) => {
    const type = s.header('streamtype');
    s.reply();
    if (type !== 'error' && type !== 'data') {
      s.reset();
      return;
    }
    const id = requestIdOf(s);
    let p = pairs.get(id);
    if (!p) {
      p = {
        timer: setTimeout(() => {
          pairs.delete(id);
          p!.error?.reset();
          p!.data?.reset();
        }, o.pairTimeoutMs ?? PAIR_TIMEOUT_MS),
      };
      pairs.set(id, p);
    }
    if (p[type]) {
      s.reset();
      return;
    }
    p[type] = s;
    if (type === 'error') s.resume(); // the client sends nothing on it
    if (p.error && p.data) {
      clearTimeout(p.timer);
      pairs.delete(id);
      void forward(p.error, p.data, o);
    }
  });
  return new Promise((resolve) =>
    conn.once('close', () => {
      for (const p of pairs.values()) clearTimeout(p.timer);
      resolve();
    }),
  );
}

async function forward(
  error: SpdyStream,
  data: SpdyStream,
  o: { dial: PortDialer; describe: (port: number) => string },
): Promise<void> {
  const port = Number(data.header('port'));
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    error.end(`invalid port "${data.header('port') ?? ''}"`);
    data.end();
    return;
  }
  let sock: Socket;
  try {
    sock = await o.dial(port);
  } catch (err) {
    error.end(`error forwarding port ${port} to ${o.describe(port)}: ${(err as Error).message}`);
    data.end();
    return;
  }
  sock.on('error', () => undefined);
  data.pipe(sock);
  sock.pipe(data);
  data.once('close', () => sock.destroy());
  sock.once('close', () => {
    if (!error.writableEnded) error.end();
  });
}
