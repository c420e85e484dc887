/**
 * Go's text forms of times and durations, for log lines that must read as the Go kubelet's (pure):
 * time.Time.String ("2024-05-28 16:17:01.3196 +0000 UTC", with " m=+5731.069650881" when the time
 * carries a monotonic reading) and time.Duration.String ("1m8.818440372s", "319.6ms", "0s").
 */

const ZERO_TIME = '0001-01-01 00:00:00 +0000 UTC';

/**
 * time.Time.String of `ms` (UTC; undefined: the zero time); `monoMs` adds the monotonic reading (ms since the process
 * started).
 */
export function goTimeString(ms: number | undefined, monoMs?: number): string {
  if (ms === undefined) return ZERO_TIME;
  const iso = new Date(ms).toISOString(); // 2024-05-28T16:17:01.319Z
  const frac = iso.slice(20, 23).replace(/0+$/, '');
  const base = `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? `.${frac}` : ''} +0000 UTC`;
  return monoMs === undefined ? base : `${base} m=+${(monoMs / 1000).toFixed(9)}`;
}

/** time.Duration.String of `ms` milliseconds (to the nanosecond Go would print, from a float). */
export function goDuration(ms: number): string {
  const ns = Math.round(ms * 1e6);
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  let n = Math.abs(ns);
  const trim = (x: string) => x.replace(/\.?0+$/, '');
  if (n < 1e3) return `${sign}${n}ns`;
  if (n < 1e6) return `${sign}${trim((n / 1e3).toFixed(3))}µs`;
  if (n < 1e9) return `${sign}${trim((n / 1e6).toFixed(6))}ms`;
  let out = '';
  const h = Math.floor(n / 3.6e12);
  n -= h * 3.6e12;
  const m = Math.floor(n / 6e10);
  n -= m * 6e10;
  if (h) out += `${h}h`;
  if (h || m) out += `${m}m`;
  return `${sign}${out}${trim((n / 1e9).toFixed(9))}s`;
}

/**
 * Go's *fs.PathError text for a failed file operation: `open /var/lib/kubelet/config.yaml: no such file or directory`.
 * `err` is Node's (its libuv message carries the C library's words, which are Go's too); any other error gives its
 * message after the path. Pure.
 */
export function goPathError(operation: string, path: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const words = code && message.startsWith(`${code}: `) ? message.slice(code.length + 2).split(', ')[0] : message;
  return `${operation} ${path}: ${words}`;
}
