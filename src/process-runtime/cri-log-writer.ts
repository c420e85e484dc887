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

/** Formats one CRI log record. */
export function formatRecord(ts: bigint, stream: LogStream, partial: boolean, content: Buffer): Buffer {
  const head = Buffer.from(`${rfc3339NanoFromNs(ts)} ${stream} ${partial ? 'P' : 'F'} `);
  return Buffer.concat([head, content, Buffer.from('\n')]);
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

  constructor(
    readonly path: string,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {
    this.fd = openLog(path);
  }

  /** Appends raw output of `stream`. */
  write(stream: LogStream, chunk: Buffer): void {
    const ts = nowNs();
    const records: Buffer[] = [];
    let buf = this.pending[stream].length ? Buffer.concat([this.pending[stream], chunk]) : chunk;
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) >= 0) {
      let line = buf.subarray(0, nl);
      while (line.length > this.maxLineBytes) {
        records.push(formatRecord(ts, stream, true, line.subarray(0, this.maxLineBytes)));
        line = line.subarray(this.maxLineBytes);
      }
      records.push(formatRecord(ts, stream, false, line));
      buf = buf.subarray(nl + 1);
    }
    while (buf.length > this.maxLineBytes) {
      records.push(formatRecord(ts, stream, true, buf.subarray(0, this.maxLineBytes)));
      buf = buf.subarray(this.maxLineBytes);
    }
    this.pending[stream] = Buffer.from(buf);
    this.append(records);
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

  private append(records: Buffer[]): void {
    if (this.fd === undefined || records.length === 0) return;
    const data = records.length === 1 ? records[0] : Buffer.concat(records);
    try {
      for (let off = 0; off < data.length;) off += writeSync(this.fd, data, off);
    } catch {
      /* a full disk must not crash the runtime; the output is dropped */
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
