/**
 * Port-forward over plain WebSocket (v4.channel.k8s.io, v4.base64.channel.k8s.io, or no
 * protocol): `?port=p1,p2` names the ports; channels come in pairs (2i data, 2i+1 error) for port
 * i, and the first frame we send on each channel is the port as a little-endian uint16. One
 * connection per port for the session.
 */
import type { RawData, WebSocket } from 'ws';
import type { Socket } from 'node:net';
import type { PortDialer } from './spdy.js';
import { decodeChannelFrame, encodeChannelFrame, isBase64Protocol } from '../ws-channel.js';

/** Serves the session; resolves when the WebSocket closes. */
export async function serveWebSocketPortForward(
  ws: WebSocket,
  o: { protocol: string; ports: number[]; dial: PortDialer; describe: (port: number) => string },
): Promise<void> {
  const base64 = isBase64Protocol(o.protocol);
  const send = (ch: number, data: Buffer, written?: () => void) => {
    if (ws.readyState !== ws.OPEN) return written?.();
    const { frame, binary } = encodeChannelFrame(ch, data, base64);
    ws.send(frame, { binary }, written && (() => written()));
  };
  const le16 = (p: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(p);
    return b;
  };
  /** Bytes queued for the client above which the pod's socket is paused until they drain. */
  const highWater = 1 << 20;
  const relay = (s: Socket, ch: number) => (d: Buffer) => {
    if (ws.bufferedAmount + d.length < highWater) return send(ch, d);
    // This frame takes the client's queue past the mark: the pod's socket waits until it has gone out.
    s.pause();
    send(ch, d, () => s.resume());
  };
  // Socket and protocol errors are followed by 'close', which ends the session.
  ws.on('error', () => undefined);
  const sockets: (Socket | undefined)[] = [];
  // The client's frames wait while a port is dialled, and while a pod's socket has more queued than it takes (a pod
  // that reads slowly or not at all): reading the client stops then, so it cannot make the kubelet hold what the pod
  // does not read.
  const waiting = new Set<Socket | 'dialling'>();
  const wait = (on: Socket | 'dialling') => {
    if (waiting.size === 0) ws.pause();
    waiting.add(on);
  };
  const proceed = (on: Socket | 'dialling') => {
    if (waiting.delete(on) && waiting.size === 0 && ws.readyState === ws.OPEN) ws.resume();
  };
  wait('dialling');
  o.ports.forEach((port, i) => {
    send(2 * i, le16(port));
    send(2 * i + 1, le16(port));
  });
  ws.on('message', (raw: RawData, isBinary: boolean) => {
    const frame = decodeChannelFrame(raw, isBinary, base64);
    if (!frame) return;
    const { ch, data: b } = frame;
    if (ch % 2 !== 0 || ch / 2 >= o.ports.length) return;
    const socket = sockets[ch / 2];
    if (socket && !socket.destroyed && !socket.write(b) && !waiting.has(socket)) {
      wait(socket);
      socket.once('drain', () => proceed(socket));
      socket.once('close', () => proceed(socket));
    }
  });
  await Promise.all(
    o.ports.map(async (port, i) => {
      try {
        const s = await o.dial(port);
        sockets[i] = s;
        s.on('error', () => undefined);
        s.on('data', relay(s, 2 * i));
        s.on('close', () => {
          if (ws.readyState === ws.OPEN) ws.close(1000);
        });
      } catch (err) {
        send(2 * i + 1, Buffer.from(`error forwarding port ${port} to ${o.describe(port)}: ${(err as Error).message}`));
      }
    }),
  );
  proceed('dialling');
  await new Promise<void>((resolve) => {
    if (ws.readyState === ws.CLOSED) resolve();
    else ws.once('close', () => resolve());
  });
  for (const s of sockets) s?.destroy();
}
