/**
 * Structured logging (pino). Verbosity follows the Go kubelet's `--v`: 0–1 info, 2–3 debug,
 * 4+ trace. Known secret-bearing keys are redacted wherever they appear. The format is upstream's
 * `logging.format`: klog's text lines (klog-text.ts) by default, or JSON lines.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { klogTextLine } from './klog-text.js';

export type { Logger } from 'pino';

/** Keys whose values never reach a log line. */
export const redactedPaths = [
  'token',
  '*.token',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'key',
  '*.key',
  'privateKey',
  '*.privateKey',
];

/** Maps `--v` to a pino level. */
export function levelForVerbosity(v: number): pino.Level {
  if (v >= 4) return 'trace';
  if (v >= 2) return 'debug';
  return 'info';
}

/** The log formats of upstream's `logging.format` / `--logging-format`: klog's text (the default) or JSON lines. */
export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'text'];

/**
 * Creates the root logger, writing to stderr as klog does; `destination` lets tests capture
 * output. Lines are pino's JSON (secrets redacted), turned into klog's text lines for `text`.
 */
export function createLogger(opts: { verbosity?: number; destination?: DestinationStream; level?: pino.Level; format?: LogFormat } = {}): Logger {
  const level = opts.level ?? levelForVerbosity(opts.verbosity ?? 0);
  const options = { level, base: undefined, redact: { paths: redactedPaths, censor: '[REDACTED]' } };
  const out = opts.destination ?? pino.destination({ fd: 2, sync: true });
  return pino(options, opts.format === 'text' ? { write: (line: string) => out.write(klogTextLine(line)) } : out);
}

/** A logger that drops everything (for tests and benchmarks). */
export const silentLogger: Logger = pino({ level: 'silent' });
