/**
 * One running container process: a host process group started with pipes or a node-pty TTY,
 * its output fed to a CriLogWriter, and its exit observed.
 *
 *   spawn ──► running ──(main process exits)──► group SIGKILLed (as a PID namespace would be)
 *                                               ──► logs flushed ──► exited(code, signal)
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Writable as WritableStream } from 'node:stream';
import { constants as osConstants } from 'node:os';
import type { Writable } from 'node:stream';
import { CriLogWriter } from './cri-log-writer.js';
import { processStartTime, signalGroup } from './proc.js';

/** How a container process ended. */
export interface ProcessExit {
  exitCode: number;
  signal?: string;
  finishedAtNs: bigint;
}

/** What to start. */
export interface ProcessSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  tty: boolean;
  stdin: boolean;
  logPath: string;
  uid?: number;
  gid?: number;
}

/** A started process; `exited` resolves once and never rejects. */
export interface ProcessHandle {
  pid: number;
  startTime: number | undefined;
  exited: Promise<ProcessExit>;
  stdin?: Writable;
  log: CriLogWriter;
  /** Live output for attach: emits 'stdout' / 'stderr' with each Buffer as it is logged. */
  output: EventEmitter;
  resize?(cols: number, rows: number): void;
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null | number): number {
  if (code !== null && code !== undefined) return code;
  const num = typeof signal === 'number' ? signal : signal ? (osConstants.signals[signal] ?? 0) : 0;
  return 128 + num;
}

/** Starts the process; rejects when it cannot be started (e.g. executable not found). */
export async function startProcess(spec: ProcessSpec, nowNs: () => bigint): Promise<ProcessHandle> {
  const log = new CriLogWriter(spec.logPath);
  if (spec.tty) return startPty(spec, log, nowNs);
  const child = spawn(spec.argv[0], spec.argv.slice(1), {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    stdio: [spec.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    uid: spec.uid,
    gid: spec.gid,
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) => {
      log.close().then(
        () => reject(err),
        () => reject(err),
      );
    });
  });
  const pid = child.pid!;
  const startTime = processStartTime(pid);
  const output = new EventEmitter();
  child.stdout!.on('data', (d: Buffer) => {
    log.write('stdout', d);
    output.emit('stdout', d);
  });
  child.stderr!.on('data', (d: Buffer) => {
    log.write('stderr', d);
    output.emit('stderr', d);
  });
  const streamsDone = Promise.all([new Promise((r) => child.stdout!.once('close', r)), new Promise((r) => child.stderr!.once('close', r))]);
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      const finishedAtNs = nowNs();
      signalGroup(pid, 'SIGKILL');
      const done = () => resolve({ exitCode: exitCodeOf(code, signal), signal: signal ?? undefined, finishedAtNs });
      Promise.race([streamsDone, new Promise((r) => setTimeout(r, 2000))])
        .then(() => log.close())
        .then(done, done);
    });
  });
  child.stdin?.on('error', () => {});
  return { pid, startTime, exited, stdin: child.stdin ?? undefined, log, output };
}

async function startPty(spec: ProcessSpec, log: CriLogWriter, nowNs: () => bigint): Promise<ProcessHandle> {
  const pty = await import('node-pty');
  const term = pty.spawn(spec.argv[0], spec.argv.slice(1), {
    name: 'xterm',
    cols: 80,
    rows: 24,
    cwd: spec.cwd,
    env: spec.env,
    uid: spec.uid,
    gid: spec.gid,
  });
  const pid = term.pid;
  const startTime = processStartTime(pid);
  const output = new EventEmitter();
  term.onData((d) => {
    const b = Buffer.from(d, 'utf8');
    log.write('stdout', b);
    output.emit('stdout', b);
  });
  const exited = new Promise<ProcessExit>((resolve) => {
    term.onExit(async ({ exitCode, signal }) => {
      const finishedAtNs = nowNs();
      signalGroup(pid, 'SIGKILL');
      await log.close();
      resolve({ exitCode: signal ? 128 + signal : exitCode, signal: signal ? String(signal) : undefined, finishedAtNs });
    });
  });
  const stdin = spec.stdin
    ? new WritableStream({
        write(chunk: Buffer, _e, cb) {
          term.write(chunk.toString('utf8'));
          cb();
        },
      })
    : undefined;
  return {
    pid,
    startTime,
    exited,
    log,
    output,
    stdin,
    resize: (c, r) => {
      if (c > 0 && r > 0) term.resize(c, r);
    },
  };
}
