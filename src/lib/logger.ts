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

/** Where a logger keeps its `--v` (children see their root's through the prototype chain). */
const VERBOSITY = Symbol('verbosity');

/** Sets `--v` on a root logger: its level and its V(1) lines (setVerbosity is /debug/flags/v's). */
export function setVerbosity(logger: Logger, v: number): void {
  logger.level = levelForVerbosity(v);
  (logger as unknown as Record<symbol, number>)[VERBOSITY] = v;
}

/**
 * Whether klog.V(v) lines are logged: `--v` at least v. A logger made with a level and no `--v`
 * (tests) logs V(2) and up by its level.
 */
export function vEnabled(logger: Logger, v: number): boolean {
  const given = (logger as unknown as Record<symbol, number | undefined>)[VERBOSITY];
  if (v <= 0) return true;
  if (given !== undefined || v === 1) return (given ?? 0) >= v;
  return logger.isLevelEnabled(levelForVerbosity(v));
}

/**
 * Logs a klog.V(v) line when `--v` is at least v: V(1) at info level (pino has no level between
 * debug and info), V(2–3) at debug, V(4+) at trace.
 */
export function logV(logger: Logger, v: number, obj: Record<string, unknown>, msg: string): void {
  if (!vEnabled(logger, v)) return;
  if (v >= 4) logger.trace(obj, msg);
  else if (v >= 2) logger.debug(obj, msg);
  else logger.info(obj, msg);
}

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
export function createLogger(
  opts: { verbosity?: number; destination?: DestinationStream; level?: pino.Level; format?: LogFormat } = {},
): Logger {
  const level = opts.level ?? levelForVerbosity(opts.verbosity ?? 0);
  const options = { level, base: undefined, redact: { paths: redactedPaths, censor: '[REDACTED]' } };
  const out = opts.destination ?? pino.destination({ fd: 2, sync: true });
  const logger = pino(
    options,
    opts.format === 'text' ? { write: (line: string) => out.write(klogTextLine(line)) } : out,
  );
  if (!opts.level) setVerbosity(logger, opts.verbosity ?? 0);
  return logger;
}

/** A logger that drops everything (for tests and benchmarks). */
export const silentLogger: Logger = pino({ level: 'silent' });

/** Node's process warnings go through the logger instead of plain text on stderr. */
export function routeProcessWarnings(logger: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (w) =>
    logger.warn({ component: 'node', warning: w.name, code: (w as { code?: string }).code }, w.message),
  );
}
