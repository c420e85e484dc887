/**
 * The kubelet as a SPDY client of a streaming server (spdy-client.ts), against the SPDY server the
 * embedded runtime serves (a real HTTP upgrade over TCP): stdin reaches the command and its end is
 * a FIN, output and the exit code come back, a refused upgrade is an error. The same client against
 * containerd 1.6 is in test/integration/containerd.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { serveRemoteCommand } from '../../src/streaming/remote-command/serve.js';
import { resultOfStatus, spdyClientRunner } from '../../src/streaming/remote-command/spdy-client.js';
import { ResizeEvents, type RemoteCommandRunner } from '../../src/streaming/remote-command/session.js';
import { rejectUpgrade } from '../../src/streaming/upgrade.js';

let server: http.Server;
let base: string;
const sizes: unknown[] = [];

/** 2 MiB of output, written as fast as the stream takes it, then exit 0 (`cat` of a large file). */
const BIG = 2 * 1024 * 1024;
const big: RemoteCommandRunner = async (io) => {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (let sent = 0; sent < BIG; sent += chunk.length)
    if (!io.stdout!.write(chunk)) await new Promise((resolve) => io.stdout!.once('drain', resolve));
  return { exitCode: 0 };
};

/** The command: echoes stdin upper-cased, reports the terminal sizes, exits 3 once stdin ends. */
const echo: RemoteCommandRunner = async (io) => {
  io.resize.on('resize', (s) => sizes.push(s));
  for await (const chunk of io.stdin!) io.stdout!.write(String(chunk).toUpperCase());
  io.stderr?.write('done\n');
  return { exitCode: 3 };
};

beforeAll(async () => {
  server = http.createServer();
  server.on('upgrade', (req, socket, head) => {
    if (req.url?.startsWith('/refuse')) return rejectUpgrade(socket, 403, 'no');
    const tty = req.url?.includes('tty') ?? false;
    if (req.url?.startsWith('/exec/big'))
      return void serveRemoteCommand(req, socket, head, {
        opts: { stdin: false, stdout: true, stderr: false, tty: false },
        command: ['cat'],
        run: big,
      });
    void serveRemoteCommand(req, socket, head, {
      opts: { stdin: true, stdout: true, stderr: !tty, tty },
      command: ['echo'],
      run: echo,
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const collect = () => {
  const parts: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      parts.push(chunk);
      cb();
    },
  });
  return { stream, text: () => Buffer.concat(parts).toString() };
};

/** A session with stdout only (no stdin, no TTY) of the streaming server at `url`, its output into `stdout`. */
const outputOnly = (url: string, stdout: Writable = collect().stream) =>
  spdyClientRunner(new URL(url), 'POST', { stdin: false, stdout: true, stderr: false, tty: false })({
    stdout,
    resize: new ResizeEvents(),
    tty: false,
    signal: new AbortController().signal,
  });

describe('SPDY client of a streaming server', () => {
  it('carries stdin to its end, stdout, stderr and the exit code', async () => {
    const stdin = new PassThrough();
    const stdout = collect();
    const stderr = collect();
    const run = spdyClientRunner(new URL(`${base}/exec/x`), 'POST', {
      stdin: true,
      stdout: true,
      stderr: true,
      tty: false,
    });
    const result = run({
      stdin,
      stdout: stdout.stream,
      stderr: stderr.stream,
      resize: new ResizeEvents(),
      tty: false,
      signal: new AbortController().signal,
    });
    stdin.write('hello ');
    stdin.end('world');
    expect(await result).toEqual({ exitCode: 3 });
    expect([stdout.text(), stderr.text()]).toEqual(['HELLO WORLD', 'done\n']);
  });

  it('returns only once all the output reached a client that stalls for longer than the runtime takes to finish', async () => {
    let handedOn = 0;
    let stalled = false;
    const slow = new Writable({
      highWaterMark: 16 * 1024,
      write(chunk: Buffer, _e, cb) {
        handedOn += chunk.length;
        // The client takes nothing for 1.5 s, then keeps up (a slow link, a busy kubectl).
        if (!stalled) {
          stalled = true;
          setTimeout(cb, 1500);
        } else cb();
      },
    });
    const result = await outputOnly(`${base}/exec/big`, slow);
    expect(result).toEqual({ exitCode: 0 });
    expect(handedOn).toBe(BIG);
  }, 10_000);

  it('a runtime that resets the connection during the upgrade fails the session, not the process', async () => {
    const resetting = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    await new Promise<void>((r) => resetting.listen(0, '127.0.0.1', r));
    try {
      const { port } = resetting.address() as AddressInfo;
      await expect(outputOnly(`http://127.0.0.1:${port}/exec/x`)).rejects.toThrow(
        "the runtime's streaming server closed the connection",
      );
    } finally {
      await new Promise<void>((r) => resetting.close(() => r()));
    }
  });

  it('sends the terminal size on the resize stream of a TTY session', async () => {
    sizes.length = 0;
    const stdin = new PassThrough();
    const resize = new ResizeEvents();
    resize.push({ width: 80, height: 24 });
    const result = spdyClientRunner(new URL(`${base}/exec/tty`), 'POST', {
      stdin: true,
      stdout: true,
      stderr: false,
      tty: true,
    })({ stdin, stdout: collect().stream, resize, tty: true, signal: new AbortController().signal });
    await new Promise((r) => setTimeout(r, 100));
    resize.push({ width: 100, height: 30 });
    await new Promise((r) => setTimeout(r, 100));
    stdin.end();
    expect(await result).toEqual({ exitCode: 3 });
    expect(sizes).toEqual([
      { width: 80, height: 24 },
      { width: 100, height: 30 },
    ]);
  });

  it('rejects when the server refuses the upgrade', async () => {
    await expect(outputOnly(`${base}/refuse`)).rejects.toThrow(/refused the upgrade: HTTP\/1\.1 403/);
  });

  it('reads the result from the v4 Status', () => {
    expect(resultOfStatus('')).toEqual({ exitCode: 0 });
    expect(resultOfStatus('{"metadata":{},"status":"Success"}')).toEqual({ exitCode: 0 });
    expect(
      resultOfStatus(
        '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"7"}]}}',
      ),
    ).toEqual({ exitCode: 7 });
    expect(resultOfStatus('{"status":"Failure","reason":"InternalError","message":"boom"}')).toEqual({ error: 'boom' });
  });
});
