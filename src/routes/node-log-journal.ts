/**
 * Service logs of a node log query (upstream's nodeLogQuery.Copy on Linux): a service journald
 * knows (`journalctl --field _SYSTEMD_UNIT` lists `<name>.service`) is read with journalctl;
 * any other is looked for as a file under the log directory (`<name>`, `<name>.log`,
 * `<name>/<name>.log`, the first that is a file). Everything is written to `out` as it comes,
 * with the client's backpressure; the whole query stops after 30 s (upstream's deadline) or when
 * the client goes away, killing journalctl.
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { hasOptions, journalctlArgs, serviceLogFileNames, type NodeLogQuery } from './node-log-query.js';
import { resolveInside } from '../lib/fs-util.js';
import { deadlineSignal } from '../lib/deadline.js';

/** Upstream's deadline for one query. */
export const QUERY_DEADLINE_MS = 30_000;
/** At most this much of journalctl's unit list is read. */
const MAX_UNIT_LIST_BYTES = 4 << 20;

/** Where service logs are read from. */
export interface JournalSources {
  /** The log directory (upstream: /var/log). */
  logDir: string;
  /** The journalctl command (found on PATH by default). */
  journalctl: string;
}

/** Runs `cmd args`, its stdout and stderr written to `out`: whether it could not run (`failed`). */
function runInto(cmd: string, args: string[], out: Writable, signal: AbortSignal): Promise<'exited' | 'failed'> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], signal });
    } catch {
      // An argument the OS refuses (a NUL in the pattern): upstream's exec fails the same way.
      return resolve('failed');
    }
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on('error', () => resolve(signal.aborted ? 'exited' : 'failed'));
    child.on('close', () => resolve('exited'));
  });
}

/** journalctl's list of units (empty when journalctl cannot run). */
function journalUnits(cmd: string, signal: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(cmd, ['--field', '_SYSTEMD_UNIT'], { stdio: ['ignore', 'pipe', 'pipe'], signal });
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (c: Buffer) => {
      if (size < MAX_UNIT_LIST_BYTES) chunks.push(c);
      size += c.length;
    });
    child.stderr.resume();
    child.on('error', () => resolve(''));
    child.on('close', (code) => resolve(code === 0 ? Buffer.concat(chunks).toString('utf8') : ''));
  });
}

/** heuristicsCopyFileLogs: the first of a service's candidate files, or a line saying why none. */
async function copyServiceFile(service: string, out: Writable, logDir: string, signal: AbortSignal): Promise<void> {
  for (const name of serviceLogFileNames(service)) {
    const path = await resolveInside(logDir, name);
    const st = path ? await stat(path).catch(() => undefined) : undefined;
    if (!path || !st || st.isDirectory()) continue;
    try {
      await pipeline(createReadStream(path), out, { end: false, signal });
    } catch (err) {
      if (!signal.aborted) out.write(`\nerror getting log for ${service}: ${(err as Error).message}\n`);
    }
    return;
  }
  out.write(`\nlog not found for ${service}\n`);
}

/** Writes the logs of `q`'s services to `out` (not ended); `signal` is the client going away. */
export async function copyServiceLogs(
  q: NodeLogQuery,
  out: Writable,
  src: JournalSources,
  signal: AbortSignal,
): Promise<void> {
  const query = deadlineSignal(QUERY_DEADLINE_MS, signal);
  const deadline = query.signal;
  try {
    const units = await journalUnits(src.journalctl, deadline);
    const native = q.services.filter((s) => units.includes(`${s}.service`));
    const files = q.services.filter((s) => !native.includes(s));
    if (native.length && !deadline.aborted) {
      const ended = await runInto(src.journalctl, journalctlArgs(q, native), out, deadline);
      if (ended === 'failed' && (q.boot ?? 0) === 0) out.write('\nerror: journal output not available\n');
    }
    if (!files.length) return;
    if (hasOptions(q)) {
      out.write(
        `\noptions present and query resolved to log files for [${files.join(' ')}]\ntry without specifying options\n`,
      );
      return;
    }
    if (deadline.aborted) {
      out.write(`\ncontext error: context deadline exceeded\n`);
      return;
    }
    for (const s of files) await copyServiceFile(s, out, src.logDir, deadline);
  } finally {
    query.done();
  }
}
