/**
 * The kubelet as a SPDY client of a streaming server (spdy-client.ts), against the SPDY server the
 * embedded runtime serves (a real HTTP upgrade over TCP): stdin reaches the command and its end is
 * a FIN, output and the exit code come back, a refused upgrade is an error. The same client against
 * containerd 1.6 is in test/integration/containerd.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { serveRemoteCommand } from '../../src/streaming/remote-command/serve.js';
import { resultOfStatus, spdyClientRunner } from '../../src/streaming/remote-command/spdy-client.js';
import { ResizeEvents, type RemoteCommandRunner } from '../../src/streaming/remote-command/session.js';
import { rejectUpgrade } from '../../src/streaming/upgrade.js';

let server: http.Server;
let base: string;
const sizes: unknown[] = [];

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
    const run = spdyClientRunner(new URL(`${base}/refuse`), 'POST', {
      stdin: false,
      stdout: true,
      stderr: false,
      tty: false,
    });
    await expect(
      run({ stdout: collect().stream, resize: new ResizeEvents(), tty: false, signal: new AbortController().signal }),
    ).rejects.toThrow(/refused the upgrade: HTTP\/1\.1 403/);
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
