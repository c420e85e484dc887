/**
 * Go `time.Duration` strings as used by KubeletConfiguration ("20s", "1m0s", "1h30m", "500ms").
 */

const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go duration into milliseconds; returns undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  let sign = 1;
  let body = s;
  if (body.startsWith('-')) {
    sign = -1;
    body = body.slice(1);
  }
  if (!body) return undefined;
  re.lastIndex = 0;
  for (;;) {
    const m = re.exec(body);
    if (!m) break;
    total += Number(m[1]) * unitMs[m[2]];
    pos = re.lastIndex;
  }
  if (pos !== body.length) return undefined;
  return sign * total;
}

/** Formats milliseconds the way Go prints a Duration ("1m0s", "20s", "500ms"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  let rest = ms / 1000;
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  rest -= m * 60;
  const sec = Math.round(rest * 1000) / 1000;
  if (h) return `${h}h${m}m${sec}s`;
  if (m) return `${m}m${sec}s`;
  return `${sec}s`;
}
