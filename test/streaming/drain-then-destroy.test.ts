import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { destroyOnceDrained } from '../../src/streaming/drain-then-destroy.js';
import { webSocketDuplex } from '../../src/streaming/ws-duplex.js';

const readable = (chunks: string[]) => {
  const r = new Readable({ read() {} });
  for (const c of chunks) r.push(c);
  r.push(null);
  return r;
};

describe('destroyOnceDrained', () => {
  it('leaves what is buffered to a reader that comes later, ends it, then destroys it', async () => {
    const r = readable(['a', 'b']);
    destroyOnceDrained(r, 10_000);
    await new Promise((res) => setTimeout(res, 20));
    expect(r.destroyed).toBe(false);
    const got: string[] = [];
    r.on('data', (d: Buffer) => got.push(String(d)));
    await once(r, 'close');
    expect([got.join(''), r.readableEnded]).toEqual(['ab', true]);
  });

  it('destroys a stream nobody reads after the grace, and one already ended at once', async () => {
    const r = readable(['never read']);
    destroyOnceDrained(r, 50);
    await once(r, 'close');
    expect(r.readableEnded).toBe(false);
    const done = readable([]);
    done.resume();
    await once(done, 'end');
    destroyOnceDrained(done, 10_000);
    expect(done.destroyed).toBe(true);
  });
});

describe('webSocketDuplex', () => {
  it('keeps the messages that came before the close for a reader that had paused, then ends', async () => {
    const http = createServer();
    const wss = new WebSocketServer({ server: http });
    await new Promise<void>((res) => http.listen(0, '127.0.0.1', res));
    wss.on('connection', (ws) =>
      ws.once('message', () => {
        ws.send(Buffer.from('one '));
        ws.send(Buffer.from('two '));
        ws.send(Buffer.from('three'), () => ws.close(1000));
      }),
    );
    const client = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}`);
    await once(client, 'open');
    const d = webSocketDuplex(client);
    d.pause();
    d.on('data', () => undefined); // attached while paused: nothing flows until resume
    d.write('go');
    await once(client, 'close');
    const got: Buffer[] = [];
    d.removeAllListeners('data');
    d.on('data', (c: Buffer) => got.push(c));
    const ended = once(d, 'end');
    d.resume();
    await ended;
    expect(Buffer.concat(got).toString()).toBe('one two three');
    wss.close();
    http.close();
  });
});
