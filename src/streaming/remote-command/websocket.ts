/**
 * Remote command over WebSocket channel protocols (channel.k8s.io, base64.channel.k8s.io,
 * v4.channel.k8s.io, v4.base64.channel.k8s.io, v5.channel.k8s.io), framed as ws-channel.ts says:
 *   on open an empty frame on the lowest writable channel says "ready";
 *   v5: the client sends [255, channel] to close one of its channels (stdin EOF).
 */
import { PassThrough, Writable } from 'node:stream';
import type { WebSocket, RawData } from 'ws';
import { Channel, parseResizeMessages, protocolVersion, statusPayload, type StreamOptions } from './protocol.js';
import { ResizeEvents, type RemoteCommandRunner } from './session.js';
import { decodeChannelFrame, encodeChannelFrame, isBase64Protocol } from '../ws-channel.js';
import { endWritable } from '../end-writable.js';

/** Bytes queued in the socket above which writers wait. */
const HIGH_WATER = 1 << 20;

/** Sends one channel frame; resolves once the socket has room again. */
function channelSender(ws: WebSocket, base64: boolean) {
  return (ch: number, data: Buffer): Promise<void> =>
    new Promise((resolve, reject) => {
      if (ws.readyState !== ws.OPEN) return reject(new Error('websocket closed'));
      const { frame, binary } = encodeChannelFrame(ch, data, base64);
      ws.send(frame, { binary }, (err) => {
        if (err) return reject(err);
        if (ws.bufferedAmount < HIGH_WATER) return resolve();
        const wait = () =>
          ws.readyState !== ws.OPEN || ws.bufferedAmount < HIGH_WATER ? resolve() : setTimeout(wait, 5);
        wait();
      });
    });
}

/** Serves one session on an accepted WebSocket; resolves when it is over. */
export async function serveWebSocketRemoteCommand(
  ws: WebSocket,
  o: { protocol: string; opts: StreamOptions; command: readonly string[]; run: RemoteCommandRunner },
): Promise<void> {
  const base64 = isBase64Protocol(o.protocol);
  const version = protocolVersion(o.protocol);
  const send = channelSender(ws, base64);
  const ac = new AbortController();
  const stdin = o.opts.stdin ? new PassThrough() : undefined;
  const resize = new ResizeEvents();
  let resizeBuf = '';
  // A send fails once the client has gone (at any byte): the stream errors, and that ends the
  // session like the close does; the listener keeps the failure from reaching the process.
  const out = (ch: number) =>
    new Writable({
      write(chunk: Buffer, _e, cb) {
        send(ch, chunk).then(() => cb(), cb);
      },
    }).on('error', () => ac.abort());
  // Socket and protocol errors are followed by 'close', which ends the session.
  ws.on('error', () => undefined);

  ws.on('message', (raw: RawData, isBinary: boolean) => {
    const frame = decodeChannelFrame(raw, isBinary, base64);
    if (!frame) return;
    const { ch, data: buf } = frame;
    if (ch === Channel.stdin && stdin && !stdin.writableEnded) {
      if (!stdin.write(buf)) {
        ws.pause();
        stdin.once('drain', () => ws.resume());
      }
    } else if (ch === Channel.resize) {
      const r = parseResizeMessages(resizeBuf + buf.toString('utf8'));
      resizeBuf = r.rest;
      for (const s of r.sizes) resize.push(s);
    } else if (ch === Channel.close && version >= 5 && buf[0] === Channel.stdin) {
      stdin?.end();
    }
  });
  const closed = new Promise<void>((resolve) =>
    ws.once('close', () => {
      ac.abort();
      stdin?.end();
      resolve();
    }),
  );

  // "Ready": an empty frame on the lowest writable channel.
  const ready = o.opts.stdout ? Channel.stdout : o.opts.stderr ? Channel.stderr : Channel.error;
  await send(ready, Buffer.alloc(0)).catch(() => undefined);

  const stdout = o.opts.stdout ? out(Channel.stdout) : undefined;
  const stderr = o.opts.stderr ? out(Channel.stderr) : undefined;
  const result = await o
    .run({ stdin, stdout, stderr, resize, tty: o.opts.tty, signal: ac.signal })
    .catch((err: Error) => ({ error: err.message }));
  // The output the runner handed on is sent before the Status: a runner may return with writes still queued (one
  // that relays another server's streams), and the Status and the close after it would overtake them.
  await Promise.all([endWritable(stdout), endWritable(stderr)]);
  if (ws.readyState === ws.OPEN) {
    const payload = statusPayload(result, version, o.command);
    if (payload) await send(Channel.error, payload).catch(() => undefined);
    ws.close(1000);
  }
  await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
  if (ws.readyState !== ws.CLOSED) ws.terminate();
}
