/** A WebSocket as a byte stream (binary messages in and out), for protocols tunneled through it. */
import { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { messageBytes } from './ws-channel.js';
import { destroyOnceDrained } from './drain-then-destroy.js';

/** Wraps `ws`: each binary message is a chunk; writes become binary messages. */
export function webSocketDuplex(ws: WebSocket): Duplex {
  const d = new Duplex({
    read() {
      ws.resume();
    },
    write(chunk: Buffer, _e, cb) {
      if (ws.readyState !== ws.OPEN) return cb(new Error('websocket closed'));
      ws.send(chunk, { binary: true }, (err) => cb(err ?? null));
    },
    final(cb) {
      ws.close(1000);
      cb();
    },
    destroy(err, cb) {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.terminate();
      cb(err);
    },
  });
  ws.on('message', (raw: RawData) => {
    if (!d.push(messageBytes(raw))) ws.pause();
  });
  ws.on('close', () => {
    // What came before the close stays readable (a tunneled SPDY connection may have paused it).
    d.push(null);
    destroyOnceDrained(d);
  });
  ws.on('error', (err) => d.destroy(err));
  return d;
}
