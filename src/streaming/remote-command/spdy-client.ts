/**
 * Remote command as a SPDY/3.1 client of a runtime's streaming server (`v4.channel.k8s.io`), for
 * clients the runtime cannot serve itself: a WebSocket `v5.channel.k8s.io` exec or attach (what
 * kubectl and the apiserver speak since ExtendWebSocketsToKubelet) meets containerd 1.6's server,
 * which knows WebSocket only up to v4 and has no way there to close stdin. The kubelet ends the
 * WebSocket itself (websocket.ts) and runs the session through this runner, as upstream's kubelet
 * translates: each channel a SPDY stream, stdin's CLOSE a FIN, the error stream's Status the
 * command's result.
 */
import net from 'node:net';
import { once } from 'node:events';
import { SpdyConnection } from '../spdy/connection.js';
import type { CommandResult, StreamOptions } from './protocol.js';
import type { RemoteCommandRunner } from './session.js';
import { upgradeToSpdy } from '../spdy/client-upgrade.js';

/** How long after its Status the runtime has to finish sending the command's output. */
const RUNTIME_GRACE_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
/** The error stream carries one Status. */
const MAX_STATUS_BYTES = 64 * 1024;
const PROTOCOL = 'v4.channel.k8s.io';

/** The command's result from the v4 error stream's Status (`{}` or nothing: success). Pure. */
export function resultOfStatus(payload: string): CommandResult {
  if (!payload.trim()) return { exitCode: 0 };
  let status: {
    status?: string;
    reason?: string;
    message?: string;
    details?: { causes?: { reason?: string; message?: string }[] };
  };
  try {
    status = JSON.parse(payload) as typeof status;
  } catch {
    return { error: payload };
  }
  if (status.status === 'Success') return { exitCode: 0 };
  if (status.reason === 'NonZeroExitCode') {
    const code = Number(status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message);
    if (Number.isInteger(code)) return { exitCode: code };
  }
  return { error: status.message ?? payload };
}

/** A runner that runs the session on the runtime's streaming server at `target` over SPDY. */
export function spdyClientRunner(target: URL, method: string, opts: StreamOptions): RemoteCommandRunner {
  return async (io) => {
    const socket = net.connect({ port: Number(target.port), host: target.hostname, noDelay: true });
    // A reset (a runtime killed mid-session) is followed by 'close', which each step below waits for; unheard, the
    // 'error' would end the kubelet.
    socket.on('error', () => undefined);
    const closeOnAbort = () => socket.destroy();
    io.signal.addEventListener('abort', closeOnAbort, { once: true });
    try {
      await once(socket, 'connect');
      const rest = await upgradeToSpdy(socket, method, target, PROTOCOL);
      if (rest.length) socket.unshift(rest);
      const conn = new SpdyConnection(socket, { server: false });
      conn.on('protocolError', () => socket.destroy());
      const open = (type: string) => conn.openStream([['streamtype', type]]);
      const error = open('error');
      const stdin = opts.stdin ? open('stdin') : undefined;
      const stdout = opts.stdout ? open('stdout') : undefined;
      const stderr = opts.stderr ? open('stderr') : undefined;
      const resize = opts.tty ? open('resize') : undefined;
      // Our side of the streams we only read ends at once, as the peer expects nothing on them.
      for (const s of [error, stdout, stderr]) s?.end();
      if (stdin && io.stdin) io.stdin.pipe(stdin);
      else stdin?.end();
      const sendSize = (size: { width: number; height: number }) =>
        resize?.write(JSON.stringify({ Width: size.width, Height: size.height }));
      if (resize) {
        if (io.resize.last) sendSize(io.resize.last);
        io.resize.on('resize', sendSize);
      }
      // Each output stream piped to its client stream; `drained` once all of it was handed on.
      const outputs = (
        [
          [stdout, io.stdout],
          [stderr, io.stderr],
        ] as const
      ).flatMap(([from, to]) => {
        if (!from || !to) return [];
        const drained = new Promise<void>((resolve) => {
          from.pipe(to, { end: false });
          from.once('end', resolve).once('close', resolve);
          io.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        return [{ from, drained }];
      });
      let status = '';
      error.on('data', (d: Buffer) => {
        if (status.length < MAX_STATUS_BYTES) status += d.toString('utf8');
      });
      await new Promise<void>((resolve) => {
        error.once('end', resolve).once('close', resolve);
        conn.once('close', resolve);
      });
      // The runtime has a second after its Status to send the rest of the output (a runtime that never ends its
      // streams does not hold the session); what it sent then reaches the client at the client's pace, however slow —
      // a client that leaves ends the session through io.signal.
      await Promise.race([Promise.all(outputs.map((o) => o.from.received)), sleep(RUNTIME_GRACE_MS)]);
      // A stream the runtime finished (or that closed) is drained; one it left open is not waited for.
      await Promise.all(outputs.filter((o) => o.from.remoteFin || o.from.destroyed).map((o) => o.drained));
      io.resize.off('resize', sendSize);
      await conn.close();
      return resultOfStatus(status);
    } finally {
      io.signal.removeEventListener('abort', closeOnAbort);
      socket.destroy();
    }
  };
}
