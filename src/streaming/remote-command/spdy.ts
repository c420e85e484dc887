/**
 * Remote command over SPDY/3.1 (after the 101): the client opens one stream per channel with a
 * `streamtype` header (error, stdin, stdout, stderr, resize); we reply to each and start once the
 * expected set is there (30 s at most, as upstream). When the command ends: status on the error
 * stream, FIN on our streams, GOAWAY.
 */
import type { Duplex } from 'node:stream';
import { SpdyConnection, type SpdyStream } from '../spdy/connection.js';
import { parseResizeMessages, protocolVersion, statusPayload, type StreamOptions } from './protocol.js';
import { ResizeEvents, type RemoteCommandRunner } from './session.js';

/** How long the client has to open its streams. */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** Serves one session on an upgraded socket; resolves when it is over. */
export async function serveSpdyRemoteCommand(
  socket: Duplex,
  o: {
    protocol: string;
    opts: StreamOptions;
    command: readonly string[];
    run: RemoteCommandRunner;
    streamTimeoutMs?: number;
  },
): Promise<void> {
  const version = protocolVersion(o.protocol);
  const conn = new SpdyConnection(socket, { server: true });
  const ac = new AbortController();
  conn.once('close', () => ac.abort());
  const expected = new Set([
    'error',
    ...(o.opts.stdin ? ['stdin'] : []),
    ...(o.opts.stdout ? ['stdout'] : []),
    ...(o.opts.stderr ? ['stderr'] : []),
    ...(o.opts.tty && version >= 3 ? ['resize'] : []),
  ]);
  const streams = new Map<string, SpdyStream>();
  const resize = new ResizeEvents();

  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), o.streamTimeoutMs ?? STREAM_CREATION_TIMEOUT_MS);
    conn.once('close', () => {
      clearTimeout(timer);
      resolve(false);
    });
    conn.on('stream', (s: SpdyStream) => {
      const type = s.header('streamtype') ?? '';
      s.reply();
      if (!expected.has(type) || streams.has(type)) {
        s.reset();
        return;
      }
      streams.set(type, s);
      if (type === 'resize') {
        let buf = '';
        s.on('data', (d: Buffer) => {
          const r = parseResizeMessages(buf + d.toString('utf8'));
          buf = r.rest;
          for (const z of r.sizes) resize.push(z);
        });
      } else if (type !== 'stdin') {
        s.resume(); // the client sends nothing on these; drain its FIN
      }
      if (streams.size === expected.size) {
        clearTimeout(timer);
        resolve(true);
      }
    });
  });
  if (!ready) {
    await conn.close();
    return;
  }

  const result = await o
    .run({
      stdin: streams.get('stdin'),
      stdout: streams.get('stdout'),
      stderr: streams.get('stderr'),
      resize,
      tty: o.opts.tty,
      signal: ac.signal,
    })
    .catch((err: Error) => ({ error: err.message }));
  const error = streams.get('error')!;
  const payload = statusPayload(result, version, o.command);
  const ends = [error, streams.get('stdout'), streams.get('stderr')].filter(
    (s): s is SpdyStream => !!s && !s.destroyed && !s.writableEnded,
  );
  if (payload && !error.destroyed) error.write(payload);
  await Promise.all(ends.map((s) => new Promise<void>((r) => s.end(r))));
  await conn.close();
}
