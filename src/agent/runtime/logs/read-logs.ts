/**
 * Reads a container's CRI log file for /containerLogs (upstream kuberuntime/logs ReadLogs):
 * tailLines, sinceTime, timestamps, limitBytes and follow. With follow it keeps reading as the
 * file grows (woken by a watch of the file, log-file-watch.ts, and at least every second, as
 * upstream) and stops when the container is no longer running and the file is drained, or when
 * `signal` aborts (the client went away) — also while it waits for a slow client to drain, so
 * the file handle is always closed when the client leaves. tailLines reads the file backwards in
 * bounded chunks: memory does not grow with the log's size.
 */
import { open, stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { parseCriLogLine, type CriLogRecord } from './cri-log.js';
import { LogFileWatch, type LogFileChange } from './log-file-watch.js';

/** v1.PodLogOptions as the kubelet applies it (sinceSeconds already turned into sinceNs). */
export interface LogReadOptions {
  follow?: boolean;
  tailLines?: number;
  sinceNs?: bigint;
  timestamps?: boolean;
  limitBytes?: number;
  /** Only this stream's lines (PodLogsQuerySplitStreams). */
  stream?: 'stdout' | 'stderr';
}

/** What follow mode needs from the runtime. */
export interface FollowDeps {
  /** Whether the container still runs (asked at the end of the log, at most every STATE_CHECK_MS). */
  isRunning(): Promise<boolean>;
  signal?: AbortSignal;
  /** The longest wait at the end of the log before reading again (default: FORCE_CHECK_MS, or POLL_MS unwatched). */
  periodMs?: number;
}

/** Upstream's logForceCheckPeriod: a watched log is read again at least this often, for what a watch may miss. */
const FORCE_CHECK_MS = 1000;
/** How often a log whose file cannot be watched is read again. */
const POLL_MS = 200;
/**
 * How often the follower asks whether the container still runs: a container that writes all the time brings it to
 * the end of its log many times a second, and each question is a CRI call.
 */
const STATE_CHECK_MS = 1000;

class LimitedWriter {
  written = 0;
  constructor(
    private readonly out: Writable,
    private readonly limit: number | undefined,
    private readonly signal?: AbortSignal,
  ) {}
  /** True once nothing more may be written: the byte limit is reached, the client left or the output closed. */
  get full() {
    return (
      (this.limit !== undefined && this.written >= this.limit) ||
      !!this.signal?.aborted ||
      this.out.destroyed ||
      this.out.writableEnded
    );
  }
  async write(buf: Buffer): Promise<void> {
    if (this.full) return;
    const room = this.limit === undefined ? buf.length : Math.min(buf.length, this.limit - this.written);
    const chunk = room < buf.length ? buf.subarray(0, room) : buf;
    this.written += chunk.length;
    if (this.out.write(chunk)) return;
    await new Promise<void>((r) => {
      const done = () => {
        this.out.off('drain', done);
        this.out.off('close', done);
        this.signal?.removeEventListener('abort', done);
        r();
      };
      this.out.once('drain', done);
      this.out.once('close', done);
      this.signal?.addEventListener('abort', done, { once: true });
    });
  }
}

const TAIL_CHUNK = 64 * 1024;
/** The longest line read as a record (runtimes split a container's lines at 16 KiB). */
const MAX_RECORD_BYTES = 1024 * 1024;

/** The offset where the last `n` lines of the open file begin, reading backwards in bounded chunks. */
export async function tailOffset(fh: import('node:fs/promises').FileHandle, size: number, n: number): Promise<number> {
  if (n <= 0) return size;
  const buf = Buffer.alloc(TAIL_CHUNK);
  let end = size;
  let count = 0;
  let skipFinalNewline = true;
  while (end > 0) {
    const start = Math.max(0, end - TAIL_CHUNK);
    const { bytesRead } = await fh.read(buf, 0, end - start, start);
    for (let i = bytesRead - 1; i >= 0; i--) {
      if (buf[i] !== 0x0a) {
        skipFinalNewline = false;
        continue;
      }
      if (skipFinalNewline) {
        skipFinalNewline = false;
        continue;
      }
      if (++count === n) return start + i + 1;
    }
    end = start;
  }
  return 0;
}

function render(rec: CriLogRecord, timestamps: boolean): Buffer {
  const parts: Buffer[] = [];
  if (timestamps) parts.push(Buffer.from(`${rec.timestamp} `));
  parts.push(rec.content);
  if (!rec.partial) parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

/** Streams the log at `path` to `out` with `opts`. */
export async function readLogs(path: string, opts: LogReadOptions, out: Writable, follow?: FollowDeps): Promise<void> {
  const w = new LimitedWriter(out, opts.limitBytes, follow?.signal);
  let fh = await open(path, 'r');
  const watch = opts.follow && follow ? new LogFileWatch(path) : undefined;
  try {
    let offset = 0;
    let pending = Buffer.alloc(0);
    let skipping = false;
    const size = (await fh.stat()).size;
    if (opts.tailLines !== undefined) offset = await tailOffset(fh, size, opts.tailLines);
    const emit = async (lines: Buffer) => {
      let start = 0;
      let nl: number;
      while ((nl = lines.indexOf(0x0a, start)) >= 0) {
        const rec = parseCriLogLine(lines.subarray(start, nl));
        start = nl + 1;
        if (!rec) continue;
        if (opts.sinceNs !== undefined && rec.tsNs < opts.sinceNs) continue;
        if (opts.stream !== undefined && rec.stream !== opts.stream) continue;
        await w.write(render(rec, !!opts.timestamps));
        if (w.full) return;
      }
    };
    const chunk = Buffer.alloc(64 * 1024);
    let stateCheckedAtMs = -Infinity;
    // What ended the last wait: a write needs only a read; anything else may have been a rotation.
    let lastChange: LogFileChange = 'unseen';
    for (;;) {
      if (w.full) return;
      // Without follow the answer is the file as it was when asked (tailLines is exact however fast the container
      // writes).
      const want = opts.follow ? chunk.length : Math.min(chunk.length, Math.max(0, size - offset));
      const { bytesRead } = want > 0 ? await fh.read(chunk, 0, want, offset) : { bytesRead: 0 };
      if (bytesRead > 0) {
        offset += bytesRead;
        let read = chunk.subarray(0, bytesRead);
        if (skipping) {
          const end = read.indexOf(0x0a);
          if (end < 0) continue;
          [read, skipping] = [read.subarray(end + 1), false];
        }
        const data = Buffer.concat([pending, read]);
        const last = data.lastIndexOf(0x0a);
        pending = last >= 0 ? Buffer.from(data.subarray(last + 1)) : data;
        // No runtime writes a record this long (they split lines at 16 KiB): a line without its newline by then is
        // not a record, and keeping it would make every read copy it again. The rest of it is skipped.
        if (pending.length > MAX_RECORD_BYTES) [pending, skipping] = [Buffer.alloc(0), true];
        if (last >= 0) await emit(data.subarray(0, last + 1));
        if (w.full) return;
        continue;
      }
      if (!watch || !follow || follow.signal?.aborted) return;
      // The log was rotated (a new file at the path): go on with the new file from its start.
      const now = lastChange === 'written' ? undefined : await stat(path).catch(() => undefined);
      if (now && now.ino !== (await fh.stat()).ino) {
        await fh.close();
        fh = await open(path, 'r');
        offset = 0;
        pending = Buffer.alloc(0);
        skipping = false;
        continue;
      }
      // At EOF: stop once the container is gone and nothing more arrived.
      if (performance.now() - stateCheckedAtMs >= STATE_CHECK_MS) {
        stateCheckedAtMs = performance.now();
        if (!(await follow.isRunning())) {
          const grown = (await stat(path).catch(() => undefined))?.size ?? offset;
          if (grown <= offset) return;
        }
      }
      lastChange = await watch.next(follow.periodMs ?? (watch.watching ? FORCE_CHECK_MS : POLL_MS), follow.signal);
    }
  } finally {
    watch?.close();
    await fh.close();
  }
}
