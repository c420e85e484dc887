/**
 * Remote command over WebSocket (websocket.ts) against a real `ws` client: the output a runner handed on reaches the
 * client before the Status, also when the runner returns with its writes still queued — as the kubelet's SPDY client
 * of a runtime does (spdy-client.ts pipes the runtime's streams into the session's).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { serveRemoteCommand } from '../../src/streaming/remote-command/serve.js';
import type { RemoteCommandRunner } from '../../src/streaming/remote-command/session.js';

const BIG = 4 * 1024 * 1024;
/** Queues 4 MiB of output without waiting for any of it, and returns at once. */
const queueAndReturn: RemoteCommandRunner = async (io) => {
  const chunk = Buffer.alloc(64 * 1024, 0x62);
  for (let queued = 0; queued < BIG; queued += chunk.length) io.stdout!.write(chunk);
  return { exitCode: 0 };
};

let server: http.Server;
let port: number;
beforeAll(async () => {
  server = http.createServer();
  server.on('upgrade', (req, socket, head) => {
    void serveRemoteCommand(req, socket, head, {
      opts: { stdin: false, stdout: true, stderr: false, tty: false },
      command: ['cat'],
      run: queueAndReturn,
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('remote command over WebSocket', () => {
  it('sends all the output a runner handed on before the Status, though the runner returned before it went', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/exec?command=cat&output=1`, ['v5.channel.k8s.io']);
    let stdoutBytes = 0;
    let stdoutAtStatus = -1;
    let status = '';
    ws.on('message', (data: Buffer) => {
      if (data[0] === 1) stdoutBytes += data.length - 1;
      if (data[0] === 3) {
        status = data.subarray(1).toString();
        stdoutAtStatus = stdoutBytes;
      }
    });
    await new Promise((resolve) => ws.once('close', resolve));
    expect(JSON.parse(status)).toMatchObject({ status: 'Success' });
    expect(stdoutAtStatus).toBe(BIG);
  });
});
