/**
 * What exec and attach do on the process runtime once a client is connected (the protocol side is
 * in src/streaming): exec starts the command in the container's context (env, working dir, user)
 * with pipes or a TTY; attach joins the running container's stdio.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CommandResult } from '../streaming/remote-command/protocol.js';
import type { RemoteCommandIO } from '../streaming/remote-command/session.js';
import type { ProcessHandle } from './process-handle.js';
import { commandIn, type ExecContext } from './container-context.js';
import { loadPty, onTerminalOutput, RAW_TERMINAL, terminalInput } from './pty.js';
import { endWritable } from '../streaming/end-writable.js';

/**
 * Writes with backpressure: pauses `src` while `w` is full. Returns what stops it (the session is over; `w` stays
 * open).
 */
function forward(src: Readable, w: Writable): () => void {
  const resume = () => src.resume();
  const onData = (d: Buffer) => {
    if (!w.destroyed && !w.write(d)) {
      src.pause();
      w.once('drain', resume);
    }
  };
  src.on('data', onData);
  return () => {
    src.off('data', onData);
    w.off('drain', resume);
  };
}

/** Runs `argv` for an exec session; resolves with its exit code once its output is delivered. */
export async function runExec(io: RemoteCommandIO, argv: string[], ctx: ExecContext): Promise<CommandResult> {
  if (io.tty) return runExecTty(io, argv, ctx);
  const cmd = commandIn(ctx, argv);
  const child = spawn(cmd.argv[0], cmd.argv.slice(1), {
    cwd: cmd.cwd,
    env: ctx.env,
    uid: cmd.uid,
    gid: cmd.gid,
    stdio: [io.stdin ? 'pipe' : 'ignore', io.stdout ? 'pipe' : 'ignore', io.stderr ? 'pipe' : 'ignore'],
  });
  const spawned = await Promise.race([
    once(child, 'spawn').then(() => undefined),
    once(child, 'error').then(([e]) => e as Error),
  ]);
  if (spawned) return { error: `failed to exec in container: ${spawned.message}` };
  const onAbort = () => child.kill('SIGKILL');
  io.signal.addEventListener('abort', onAbort, { once: true });
  if (io.stdin && child.stdin) {
    child.stdin.on('error', () => undefined);
    io.stdin.pipe(child.stdin);
  }
  const outputs = [
    io.stdout && child.stdout ? pipeline(child.stdout, io.stdout).catch(() => undefined) : Promise.resolve(),
    io.stderr && child.stderr ? pipeline(child.stderr, io.stderr).catch(() => undefined) : Promise.resolve(),
  ];
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  await Promise.all(outputs);
  io.signal.removeEventListener('abort', onAbort);
  io.stdin?.unpipe();
  return { exitCode: code ?? 128 + (signal ? ((await import('node:os')).constants.signals[signal] ?? 0) : 0) };
}

async function runExecTty(io: RemoteCommandIO, argv: string[], ctx: ExecContext): Promise<CommandResult> {
  let pty;
  try {
    pty = await loadPty();
  } catch (err) {
    return { error: `failed to exec in container: ${(err as Error).message}` };
  }
  const size = io.resize.last;
  let term: import('node-pty').IPty;
  try {
    const cmd = commandIn(ctx, argv);
    term = pty.spawn(cmd.argv[0], cmd.argv.slice(1), {
      name: 'xterm',
      ...RAW_TERMINAL,
      cols: size?.width || 80,
      rows: size?.height || 24,
      cwd: cmd.cwd,
      env: ctx.env,
      uid: cmd.uid,
      gid: cmd.gid,
    });
  } catch (err) {
    return { error: `failed to exec in container: ${(err as Error).message}` };
  }
  const onResize = (s: { width: number; height: number }) => {
    if (s.width > 0 && s.height > 0) term.resize(s.width, s.height);
  };
  io.resize.on('resize', onResize);
  const onAbort = () => term.kill('SIGKILL');
  io.signal.addEventListener('abort', onAbort, { once: true });
  onTerminalOutput(term, (bytes) => {
    if (io.stdout && !io.stdout.destroyed && !io.stdout.write(bytes)) {
      term.pause();
      io.stdout.once('drain', () => term.resume());
    }
  });
  const stopInput = io.stdin ? forward(io.stdin, terminalInput(term)) : undefined;
  const exit = await new Promise<{ exitCode: number; signal?: number }>((resolve) => term.onExit(resolve));
  stopInput?.();
  io.resize.off('resize', onResize);
  io.signal.removeEventListener('abort', onAbort);
  await endWritable(io.stdout);
  return { exitCode: exit.signal ? 128 + exit.signal : exit.exitCode };
}

/**
 * Output queued for one attach client above which its share of the container's output is dropped:
 * the container's output goes on (to its log and to the other clients) whatever one client reads.
 */
const ATTACH_QUEUE_LIMIT = 4 << 20;

/** Writes `data` to an attach client unless it has gone or is more than ATTACH_QUEUE_LIMIT behind. */
function offer(w: Writable | undefined, data: Buffer): void {
  if (w && !w.destroyed && !w.writableEnded && w.writableLength < ATTACH_QUEUE_LIMIT) w.write(data);
}

/**
 * Joins a running container's stdio until it exits or the client leaves; upstream answers Success.
 * A client may leave at any byte: a write to its stream then fails, and the failure ends the
 * session instead of reaching the process as an unhandled 'error'.
 */
export async function runAttach(io: RemoteCommandIO, h: ProcessHandle): Promise<CommandResult> {
  const left = new AbortController();
  const onClientError = () => left.abort();
  io.stdout?.on('error', onClientError);
  io.stderr?.on('error', onClientError);
  const onStdout = (d: Buffer) => offer(io.stdout, d);
  const onStderr = (d: Buffer) => offer(io.stderr, d);
  h.output.on('stdout', onStdout);
  h.output.on('stderr', onStderr);
  const onResize = (s: { width: number; height: number }) => h.resize?.(s.width, s.height);
  io.resize.on('resize', onResize);
  if (io.resize.last) onResize(io.resize.last);
  const stopForwarding = io.stdin && h.stdin ? forward(io.stdin, h.stdin) : undefined;
  const ended = (signal: AbortSignal) =>
    new Promise((r) => (signal.aborted ? r(undefined) : signal.addEventListener('abort', r, { once: true })));
  await Promise.race([h.exited, ended(io.signal), ended(left.signal)]);
  h.output.off('stdout', onStdout);
  h.output.off('stderr', onStderr);
  io.resize.off('resize', onResize);
  stopForwarding?.();
  await Promise.all([endWritable(io.stdout), endWritable(io.stderr)]);
  io.stdout?.off('error', onClientError);
  io.stderr?.off('error', onClientError);
  // Late failures of a stream that is being torn down have nowhere to go.
  io.stdout?.on('error', () => undefined);
  io.stderr?.on('error', () => undefined);
  return { exitCode: 0 };
}
