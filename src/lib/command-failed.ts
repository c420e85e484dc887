/**
 * A start that fails, logged as upstream's cli.Run logs it: one error line `"command failed" err="…"`, the line an
 * operator greps the journal for (`failed to parse kubelet flag: …`, `failed to run Kubelet: …`).
 */
import type { Logger } from './logger.js';

/** Logs `message` as the command's failure. */
export function logCommandFailed(logger: Logger, message: string): void {
  logger.error({ err: message }, 'command failed');
}

/** Logs `why` as upstream's Run failure (`failed to run Kubelet: <why>`), which every failure after the config is. */
export function logRunFailed(logger: Logger, why: string): void {
  logCommandFailed(logger, `failed to run Kubelet: ${why}`);
}
