/**
 * One running container process: a host process group started with pipes, FIFOs (daemon mode,
 * container-io.ts) or a node-pty TTY, its output fed to a CriLogWriter, and its exit observed;
 * or, after a daemon restart, a detached one adopted again.
 *
 *   spawn ──► running ──(main process exits)──► group SIGKILLed (as a PID namespace would be)
 *                                               ──► logs flushed ──► exited(code, signal)
 */
import { loadPty, onTerminalOutput, RAW_TERMINAL, terminalInput } from './pty.js';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { CriLogWriter, type LogStream } from './cri-log-writer.js';
import { isSameProcessAlive, processStartTime, signalGroup } from './proc.js';
import { openOutputReaders, prepareDetachedIo, readExitFile, type DetachedStdio } from './container-io.js';

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
  /** Daemon mode: the directory of the container's detached I/O (container-io.ts). */
  ioDir?: string;
  /** Wraps the main process's argv (the mount namespace), outside the exit wrapper. */
  wrap?: (argv: string[]) => string[];
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
  /** Detached containers (daemon mode): stop reading its output and leave it running. */
  detach?(): Promise<void>;
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null | number): number {
  if (code !== null && code !== undefined) return code;
  const num = typeof signal === 'number' ? signal : signal ? (osConstants.signals[signal] ?? 0) : 0;
  return 128 + num;
}

/**
 * The emitter attach sessions listen on. Any number of clients may attach to one container at
 * once (each adds a listener per stream and removes it when it leaves), so there is no listener cap.
 */
function attachOutputs(): EventEmitter {
  return new EventEmitter().setMaxListeners(0);
}

/** Feeds both output streams to the log and to attach listeners; resolves once both have closed. */
function relayOutput(
  streams: { stdout: Readable; stderr: Readable },
  log: CriLogWriter,
  output: EventEmitter,
): Promise<unknown> {
  const relay = (name: LogStream) => {
    streams[name].on('data', (d: Buffer) => {
      log.write(name, d);
      output.emit(name, d);
    });
    streams[name].on('error', () => {});
    return new Promise((r) => streams[name].once('close', r));
  };
  return Promise.all([relay('stdout'), relay('stderr')]);
}

/** The exit of a container whose main process ended: the group is killed, output drained (bounded), the log closed. */
async function settle(
  pid: number,
  streamsDone: Promise<unknown>,
  log: CriLogWriter,
  exit: () => Promise<ProcessExit>,
): Promise<ProcessExit> {
  signalGroup(pid, 'SIGKILL');
  await Promise.race([streamsDone, new Promise((r) => setTimeout(r, 2000))]);
  await log.close().catch(() => {});
  return exit();
}

/**
 * Starts the process; rejects when it cannot be started (e.g. executable not found). With
 * `spec.ioDir` (daemon mode) its output goes through FIFOs and its exit status to a file
 * (container-io.ts), so that a later runtime process can adopt it (adoptProcess).
 */
export async function startProcess(spec: ProcessSpec, nowNs: () => bigint): Promise<ProcessHandle> {
  const log = new CriLogWriter(spec.logPath);
  if (spec.tty) return startPty(spec, log, nowNs);
  let io: DetachedStdio | undefined;
  try {
    io = spec.ioDir ? await prepareDetachedIo(spec.ioDir, spec.argv) : undefined;
  } catch (err) {
    await log.close();
    throw err;
  }
  const argv = (spec.wrap ?? ((a: string[]) => a))(io?.argv ?? spec.argv);
  const child = spawn(argv[0], argv.slice(1), {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    stdio: [spec.stdin ? 'pipe' : 'ignore', io?.stdout ?? 'pipe', io?.stderr ?? 'pipe', ...(io ? [io.exit] : [])],
    uid: spec.uid,
    gid: spec.gid,
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) => {
      io?.abandon();
      log.close().then(
        () => reject(err),
        () => reject(err),
      );
    });
  });
  const pid = child.pid!;
  const startTime = processStartTime(pid);
  const output = attachOutputs();
  const streams = io ? io.spawned() : { stdout: child.stdout!, stderr: child.stderr! };
  const streamsDone = relayOutput(streams, log, output);
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      const finishedAtNs = nowNs();
      void settle(pid, streamsDone, log, async () => ({
        exitCode: exitCodeOf(code, signal),
        signal: signal ?? undefined,
        finishedAtNs,
      })).then(resolve);
    });
  });
  child.stdin?.on('error', () => {});
  const detach = io ? () => detachOutput(streams, log) : undefined;
  return { pid, startTime, exited, stdin: child.stdin ?? undefined, log, output, detach };
}

/** Stops reading a detached container's output (the container keeps running; its FIFOs buffer). */
async function detachOutput(streams: { stdout: Readable; stderr: Readable }, log: CriLogWriter): Promise<void> {
  streams.stdout.destroy();
  streams.stderr.destroy();
  await log.detach();
}

/** How often an adopted process (not our child: no exit event) is checked for having ended. */
const ADOPTED_POLL_MS = 1000;

/**
 * Takes over a detached container started by an earlier runtime process: reads its FIFOs again
 * and notices its end by polling (it is not our child); the exit status comes from the exit file
 * (none: the wrapper was killed, reported as SIGKILL's 137).
 */
export function adoptProcess(
  o: { pid: number; startTime?: number; ioDir: string; logPath: string },
  nowNs: () => bigint,
): ProcessHandle {
  const log = new CriLogWriter(o.logPath);
  const output = attachOutputs();
  const streams = openOutputReaders(o.ioDir);
  const streamsDone = relayOutput(streams, log, output);
  let timer: NodeJS.Timeout | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    let done = false;
    const check = () => {
      if (done || isSameProcessAlive(o.pid, o.startTime)) return;
      done = true;
      clearInterval(timer);
      const seenAt = nowNs();
      void settle(
        o.pid,
        streamsDone,
        log,
        async () => (await readExitFile(o.ioDir)) ?? { exitCode: 137, signal: 'SIGKILL', finishedAtNs: seenAt },
      ).then(resolve);
    };
    timer = setInterval(check, ADOPTED_POLL_MS).unref();
    void streamsDone.then(check);
  });
  const detach = async () => {
    clearInterval(timer);
    await detachOutput(streams, log);
  };
  return { pid: o.pid, startTime: o.startTime, exited, log, output, detach };
}

async function startPty(spec: ProcessSpec, log: CriLogWriter, nowNs: () => bigint): Promise<ProcessHandle> {
  const pty = await loadPty();
  const argv = (spec.wrap ?? ((a: string[]) => a))(spec.argv);
  const term = pty.spawn(argv[0], argv.slice(1), {
    name: 'xterm',
    ...RAW_TERMINAL,
    cols: 80,
    rows: 24,
    cwd: spec.cwd,
    env: spec.env,
    uid: spec.uid,
    gid: spec.gid,
  });
  const pid = term.pid;
  const startTime = processStartTime(pid);
  const output = attachOutputs();
  onTerminalOutput(term, (b) => {
    log.write('stdout', b);
    output.emit('stdout', b);
  });
  const exited = new Promise<ProcessExit>((resolve) => {
    term.onExit(({ exitCode, signal }) => {
      const finishedAtNs = nowNs();
      void settle(pid, Promise.resolve(), log, async () => ({
        exitCode: signal ? 128 + signal : exitCode,
        signal: signal ? String(signal) : undefined,
        finishedAtNs,
      })).then(resolve);
    });
  });
  const stdin = spec.stdin ? terminalInput(term) : undefined;
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
