/**
 * The sessions behind CRI Exec / Attach / PortForward: each turns a validated request into a
 * PendingStream for the streaming server (protocols from src/streaming, the work from
 * stream-runners.ts).
 */
import { connect, type Socket } from 'node:net';
import type * as cri from '../cri/types.js';
import { servePortForward } from '../streaming/port-forward/serve.js';
import type { StreamOptions } from '../streaming/remote-command/protocol.js';
import { serveRemoteCommand } from '../streaming/remote-command/serve.js';
import { resolveExecutableIn } from './container-view.js';
import type { ProcessHandle } from './process-handle.js';
import type { SandboxRecord } from './state.js';
import { runAttach, runExec } from './stream-runners.js';
import type { ExecContext } from './container-context.js';
import type { PendingStream } from './streaming-server.js';
import { messageOf } from '../lib/errors.js';

/** The streams an Exec / Attach request asks for (a TTY drops stderr, as upstream). */
export function streamOptionsOf(req: {
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
  tty?: boolean;
}): StreamOptions {
  return { stdin: !!req.stdin, stdout: !!req.stdout, stderr: !!req.stderr && !req.tty, tty: !!req.tty };
}

/** Runs `cmd` in the container context once a client connects. */
export function execSession(cmd: string[], opts: StreamOptions, ctx: ExecContext): PendingStream {
  return {
    kind: 'exec',
    serve: (hreq, socket, head) =>
      serveRemoteCommand(hreq, socket, head, {
        opts,
        command: cmd,
        run: async (io) => {
          let executable;
          try {
            executable = await resolveExecutableIn(ctx.view, cmd[0], ctx.env.PATH, ctx.cwd);
          } catch (err) {
            return { error: `failed to exec in container: exec: "${cmd[0]}": ${messageOf(err)}` };
          }
          if (!executable)
            return { error: `failed to exec in container: exec: "${cmd[0]}": executable file not found in $PATH` };
          return runExec(io, cmd, ctx);
        },
      }),
  };
}

/** Joins a running container's stdio once a client connects. */
export function attachSession(opts: StreamOptions, h: ProcessHandle): PendingStream {
  return {
    kind: 'attach',
    serve: (hreq, socket, head) =>
      serveRemoteCommand(hreq, socket, head, { opts, command: [], run: (io) => runAttach(io, h) }),
  };
}

/** Forwards to ports on the host (the pod's network) once a client connects. */
export function portForwardSession(sb: SandboxRecord, req: cri.PortForwardRequest): PendingStream {
  const describe = () =>
    `pod ${sb.config.metadata?.namespace}/${sb.config.metadata?.name}, uid ${sb.config.metadata?.uid}`;
  const dial = (port: number) =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect({ port, host: '127.0.0.1', noDelay: true }); // as Go's dial: no Nagle on forwarded bytes
      s.once('connect', () => {
        s.removeAllListeners('error');
        resolve(s);
      });
      s.once('error', (err) => reject(new Error(`dial tcp4 127.0.0.1:${port}: ${err.message}`)));
    });
  return {
    kind: 'portforward',
    serve: (hreq, socket, head) => servePortForward(hreq, socket, head, { dial, describe, ports: req.port ?? [] }),
  };
}
