/**
 * V8's code flushing, tuned for a long-running agent that is idle most of the time. V8 drops the
 * bytecode of a function that has not run for `--bytecode-old-age` full garbage collections (5 by
 * default), and never drops baseline (Sparkplug) code, which keeps that function's bytecode alive
 * too. Much of a kubelet's code runs once or rarely (flag and config parsing, TLS set-up,
 * registration, the start of a burst of pods), so at idle its compiled code stays in the heap for
 * good. With baseline code flushed and an age of 2, a function unused for two full collections is
 * compiled again when next called: 4–5 MiB less RSS for an idle kubelet with 100 pods, at the same
 * idle CPU (docs/performance-history.md, 2026-11-29).
 *
 * These flags cannot go in NODE_OPTIONS (Node allows only a few V8 flags there) and V8 reads them
 * at each collection, so the command sets them when it starts. A flag the process was started
 * with (`node --bytecode-old-age=5 …`) is the operator's choice and is left as given.
 */
import { setFlagsFromString } from 'node:v8';

/** The code-flushing settings the kubelet runs with. */
export const CODE_FLUSHING_FLAGS = ['--flush-baseline-code', '--bytecode-old-age=2'] as const;

/** A V8 flag's name without `--`, `no-` or a value; V8 takes `_` and `-` alike. */
function flagName(flag: string): string {
  return flag
    .replace(/^--(no-?)?/, '')
    .split('=')[0]
    .replaceAll('_', '-');
}

/** The settings to apply: ours, but for those the process was started with. */
export function codeFlushingFlags(execArgv: readonly string[]): string[] {
  const given = new Set(execArgv.filter((a) => a.startsWith('--')).map(flagName));
  return CODE_FLUSHING_FLAGS.filter((flag) => !given.has(flagName(flag)));
}

/** Sets V8's code flushing for this process. */
export function applyCodeFlushing(execArgv: readonly string[] = process.execArgv): void {
  const flags = codeFlushingFlags(execArgv);
  if (flags.length) setFlagsFromString(flags.join(' '));
}
