/** Parsing of CRI log records: `<RFC3339Nano> <stdout|stderr> <F|P> <content>`. */
import { parseRfc3339Ns } from '../../../lib/time.js';

/** One record. */
export interface CriLogRecord {
  timestamp: string;
  tsNs: bigint;
  stream: 'stdout' | 'stderr';
  partial: boolean;
  content: Buffer;
}

/** Parses one line (without its newline); undefined when malformed. */
export function parseCriLogLine(line: Buffer): CriLogRecord | undefined {
  const s1 = line.indexOf(0x20);
  if (s1 < 0) return undefined;
  const s2 = line.indexOf(0x20, s1 + 1);
  if (s2 < 0) return undefined;
  const timestamp = line.subarray(0, s1).toString();
  const stream = line.subarray(s1 + 1, s2).toString();
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const tsNs = parseRfc3339Ns(timestamp);
  if (tsNs === undefined) return undefined;
  // Tag field (F / P); older formats without a tag are treated as full lines.
  const s3 = line.indexOf(0x20, s2 + 1);
  const tag = s3 >= 0 ? line.subarray(s2 + 1, s3).toString() : line.subarray(s2 + 1).toString();
  if (tag === 'F' || tag === 'P') {
    return {
      timestamp,
      tsNs,
      stream,
      partial: tag === 'P',
      content: s3 >= 0 ? line.subarray(s3 + 1) : Buffer.alloc(0),
    };
  }
  return { timestamp, tsNs, stream, partial: false, content: line.subarray(s2 + 1) };
}
