/**
 * The kernel's log as /dev/kmsg gives it (Documentation/ABI/testing/dev-kmsg): one record per read,
 * `<level>,<sequence>,<microseconds since boot>,<flags>[,…];<message>` and a newline, then continuation lines that
 * begin with a space (` SUBSYSTEM=…`). The device is opened non-blocking and read until it has nothing more: a read
 * that would wait says EAGAIN, and one after records were overwritten says EPIPE and goes on from the oldest left.
 * A regular file of records (a saved log) reads the same, in chunks, to its end.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';

/** One record of the kernel's log. */
export interface KmsgRecord {
  /** Its sequence number: increasing within a boot. */
  sequence: number;
  message: string;
}

/** The records in `lines` (whole lines, without their newlines); continuation and malformed lines are skipped. */
export function parseKmsgLines(lines: readonly string[]): KmsgRecord[] {
  const records: KmsgRecord[] = [];
  for (const line of lines) {
    if (line.startsWith(' ')) continue;
    const separator = line.indexOf(';');
    if (separator < 0) continue;
    const sequence = Number(line.slice(0, separator).split(',')[1]);
    if (!Number.isSafeInteger(sequence)) continue;
    records.push({ sequence, message: line.slice(separator + 1) });
  }
  return records;
}

/** A record is at most a page of text plus its dictionary (the kernel's limit is below 8 KiB). */
const READ_SIZE = 16 * 1024;
/** At most this much is read per call, so a long log (or a large file) is taken over several calls. */
const MAX_BYTES_PER_READ = 1024 * 1024;

/** Reads the kernel's log from where the last read stopped. */
export class KmsgReader {
  private readonly buffer = Buffer.alloc(READ_SIZE);
  /** The end of a line a chunked read (a regular file) cut in two. */
  private partial = '';

  private constructor(private readonly fd: number) {}

  /** Opens `path` (normally /dev/kmsg) at its oldest record; throws when it cannot be read (not root, no device). */
  static open(path: string): KmsgReader {
    return new KmsgReader(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
  }

  /** The records written since the last call, up to about 1 MiB of them; never waits. */
  readAvailable(): KmsgRecord[] {
    const lines: string[] = [];
    for (let total = 0; total < MAX_BYTES_PER_READ;) {
      let n: number;
      try {
        n = readSync(this.fd, this.buffer, 0, READ_SIZE, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') {
          total++;
          continue;
        }
        if (code === 'EAGAIN') break;
        throw err;
      }
      if (n === 0) break;
      total += n;
      const text = this.partial + this.buffer.toString('utf8', 0, n);
      const end = text.lastIndexOf('\n');
      // A line longer than any record is no record: dropped, so a file without newlines cannot grow this.
      this.partial = text.length - end - 1 > READ_SIZE ? '' : text.slice(end + 1);
      if (end >= 0) lines.push(...text.slice(0, end).split('\n'));
    }
    return parseKmsgLines(lines);
  }

  close(): void {
    closeSync(this.fd);
  }
}
