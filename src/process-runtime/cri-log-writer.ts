/**
 * Writes a container's stdout/stderr in the CRI log format that the kubelet (and `kubectl logs`)
 * reads: `<RFC3339Nano> <stream> <F|P> <content>\n`. A line longer than `maxLineBytes` is split
 * into P(artial) records ending with an F record; a trailing unterminated line is written as F
 * when its stream ends.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { nowNs, rfc3339NanoFromNs } from '../lib/time.js';

/** Largest content of one record, as containerd's default (16 KiB). */
export const MAX_LINE_BYTES = 16 * 1024;

/** Which stream a record came from. */
export type LogStream = 'stdout' | 'stderr';

const NEWLINE = Buffer.from('\n');

/** The head of a CRI log record: `<RFC3339Nano> <stream> <F|P> `. */
function recordHead(ts: bigint, stream: LogStream, partial: boolean): Buffer {
  return Buffer.from(`${rfc3339NanoFromNs(ts)} ${stream} ${partial ? 'P' : 'F'} `);
}

/** Formats one CRI log record. */
export function formatRecord(ts: bigint, stream: LogStream, partial: boolean, content: Buffer): Buffer {
  return Buffer.concat([recordHead(ts, stream, partial), content, NEWLINE]);
}

/** The record that tells a log's reader how much output was lost there, and why. */
function droppedNotice(bytes: number, reason: string): Buffer {
  return formatRecord(
    nowNs(),
    'stderr',
    false,
    Buffer.from(`[process runtime] ${bytes} bytes of this container's log were dropped: ${reason}`),
  );
}

/**
 * One log file fed by any number of streams; `close()` flushes every stream's pending bytes.
 * Records are written synchronously, as they are read (as containerd's shim does): output the
 * runtime has taken from a container is in the file before the next read, so a runtime killed at
 * any moment loses none of it (an async write queue would hold it in memory).
 */
export class CriLogWriter {
  private fd: number | undefined;
  private pending: Record<LogStream, Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
  /** Output dropped since the last write that succeeded; `cut`: the file ends inside a record. */
  private lost: { bytes: number; reason: string; cut: boolean } | undefined;

  constructor(
    readonly path: string,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {
    this.fd = openLog(path);
  }

  /**
   * Appends raw output of `stream`. The lines of one chunk were read at one instant and carry its timestamp, whose
   * record heads are formatted once per chunk (formatting them per line was half the runtime's CPU under a container
   * that logs as fast as it can).
   */
  write(stream: LogStream, chunk: Buffer): void {
    const ts = nowNs();
    const fullHead = recordHead(ts, stream, false);
    let partialHead: Buffer | undefined;
    const pieces: Buffer[] = [];
    const record = (partial: boolean, content: Buffer) =>
      pieces.push(partial ? (partialHead ??= recordHead(ts, stream, true)) : fullHead, content, NEWLINE);
    let buf = this.pending[stream].length ? Buffer.concat([this.pending[stream], chunk]) : chunk;
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) >= 0) {
      let line = buf.subarray(0, nl);
      while (line.length > this.maxLineBytes) {
        record(true, line.subarray(0, this.maxLineBytes));
        line = line.subarray(this.maxLineBytes);
      }
      record(false, line);
      buf = buf.subarray(nl + 1);
    }
    while (buf.length > this.maxLineBytes) {
      record(true, buf.subarray(0, this.maxLineBytes));
      buf = buf.subarray(this.maxLineBytes);
    }
    this.pending[stream] = Buffer.from(buf);
    this.append(pieces);
  }

  /** Flushes what is left of `stream` as a full line. */
  endStream(stream: LogStream): void {
    this.flush(stream, false);
  }

  /** Reopens the file (after rotation). */
  reopen(): void {
    this.closeFd();
    this.fd = openLog(this.path);
  }

  /**
   * Closes the file leaving lines open: pending bytes are written as P(artial) records, so the
   * next writer of this log (a restarted runtime) completes the line.
   */
  detach(): Promise<void> {
    this.flush('stdout', true);
    this.flush('stderr', true);
    this.closeFd();
    return Promise.resolve();
  }

  /** Flushes pending lines and closes the file. */
  close(): Promise<void> {
    this.endStream('stdout');
    this.endStream('stderr');
    this.closeFd();
    return Promise.resolve();
  }

  /** Writes what is left of `stream`, as a full or a partial line. */
  private flush(stream: LogStream, partial: boolean): void {
    if (this.pending[stream].length) this.append([formatRecord(nowNs(), stream, partial, this.pending[stream])]);
    this.pending[stream] = Buffer.alloc(0);
  }

  /**
   * Writes records. A write that fails (a full disk) must not crash the runtime: the output is
   * dropped, and once the log can be written again a stderr record says how much was lost and
   * why, so that `kubectl logs` shows the gap where it is. A record cut short is ended first, so
   * that the records after it parse. `pieces` are whole records once joined.
   */
  private append(pieces: Buffer[]): void {
    if (this.fd === undefined || pieces.length === 0) return;
    const head = this.lost
      ? [...(this.lost.cut ? [Buffer.from('\n')] : []), droppedNotice(this.lost.bytes, this.lost.reason)]
      : [];
    const all = [...head, ...pieces];
    const data = all.length === 1 ? all[0] : Buffer.concat(all);
    let off = 0;
    try {
      while (off < data.length) off += writeSync(this.fd, data, off);
      this.lost = undefined;
    } catch (err) {
      const headBytes = head.reduce((n, b) => n + b.length, 0);
      const lostNow = data.length - Math.max(off, headBytes);
      const reason =
        (err as NodeJS.ErrnoException).code === 'ENOSPC' ? 'no space left on device' : (err as Error).message;
      this.lost = {
        bytes: (this.lost?.bytes ?? 0) + lostNow,
        reason,
        cut: off > 0 ? data[off - 1] !== 0x0a : !!this.lost?.cut,
      };
    }
  }

  private closeFd(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      /* already gone */
    }
    this.fd = undefined;
  }
}

/** Opens (creating) the log for appending; throws when it cannot (the container is not started, as with containerd). */
function openLog(path: string): number {
  mkdirSync(dirname(path), { recursive: true });
  return openSync(path, 'a');
}
