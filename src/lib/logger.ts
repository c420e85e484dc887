/**
 * Structured logging (pino). Verbosity follows the Go kubelet's `--v`: 0–1 info, 2–3 debug,
 * 4+ trace. Known secret-bearing keys are redacted wherever they appear.
 */
import { pino, type Logger, type DestinationStream } from 'pino';

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

/** Creates the root logger; `destination` lets tests capture output. */
export function createLogger(opts: { verbosity?: number; destination?: DestinationStream; level?: pino.Level } = {}): Logger {
  const level = opts.level ?? levelForVerbosity(opts.verbosity ?? 0);
  const options = { level, base: undefined, redact: { paths: redactedPaths, censor: '[REDACTED]' } };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** A logger that drops everything (for tests and benchmarks). */
export const silentLogger: Logger = pino({ level: 'silent' });
