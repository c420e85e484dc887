/**
 * Writes a container's stdout/stderr in the CRI log format that the kubelet (and `kubectl logs`)
 * reads: `<RFC3339Nano> <stream> <F|P> <content>\n`. A line longer than `maxLineBytes` is split
 * into P(artial) records ending with an F record; a trailing unterminated line is written as F
 * when its stream ends.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
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

/** One log file fed by any number of streams; `close()` flushes every stream's pending bytes. */
export class CriLogWriter {
  private out: WriteStream;
  private pending: Record<LogStream, Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };

  constructor(
    readonly path: string,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.out = createWriteStream(path, { flags: 'a' });
    this.out.on('error', () => {
      /* a removed log dir must not crash the runtime */
    });
  }

  /** Appends raw output of `stream`. */
  write(stream: LogStream, chunk: Buffer): void {
    const ts = nowNs();
    let buf = this.pending[stream].length ? Buffer.concat([this.pending[stream], chunk]) : chunk;
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) >= 0) {
      let line = buf.subarray(0, nl);
      while (line.length > this.maxLineBytes) {
        this.out.write(formatRecord(ts, stream, true, line.subarray(0, this.maxLineBytes)));
        line = line.subarray(this.maxLineBytes);
      }
      this.out.write(formatRecord(ts, stream, false, line));
      buf = buf.subarray(nl + 1);
    }
    while (buf.length > this.maxLineBytes) {
      this.out.write(formatRecord(ts, stream, true, buf.subarray(0, this.maxLineBytes)));
      buf = buf.subarray(this.maxLineBytes);
    }
    this.pending[stream] = Buffer.from(buf);
  }

  /** Flushes what is left of `stream` as a full line. */
  endStream(stream: LogStream): void {
    if (this.pending[stream].length) this.out.write(formatRecord(nowNs(), stream, false, this.pending[stream]));
    this.pending[stream] = Buffer.alloc(0);
  }

  /** Reopens the file (after rotation). */
  reopen(): void {
    this.out.end();
    mkdirSync(dirname(this.path), { recursive: true });
    this.out = createWriteStream(this.path, { flags: 'a' });
    this.out.on('error', () => {});
  }

  /**
   * Closes the file leaving lines open: pending bytes are written as P(artial) records, so the
   * next writer of this log (a restarted runtime) completes the line.
   */
  detach(): Promise<void> {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.pending[stream].length) this.out.write(formatRecord(nowNs(), stream, true, this.pending[stream]));
      this.pending[stream] = Buffer.alloc(0);
    }
    return new Promise((resolve) => this.out.end(resolve));
  }

  /** Flushes pending lines and closes the file; resolves when the data is on disk. */
  close(): Promise<void> {
    this.endStream('stdout');
    this.endStream('stderr');
    return new Promise((resolve) => this.out.end(resolve));
  }
}
