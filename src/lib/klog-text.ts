/**
 * The Go kubelet's default log format (klog's text format for structured logs), made from one of
 * pino's JSON lines (pure):
 *
 *   I1125 03:31:51.123456    5421 kubelet:0] "Started kubelet" node="n1" pods=3
 *
 * The severity letter (I for info and the verbose levels, W, E, F), the local month, day and
 * time to the microsecond, the process id right-aligned in 7 columns, the source (klog's
 * file:line; here the logger's `component`, else "kubelet", with line 0), then the quoted
 * message and the fields as key=value: strings quoted as Go's %q, numbers and booleans bare,
 * objects as JSON, a string with newlines as klog's `key=<` block.
 */
import { goQuote } from './go-quote.js';

const SEVERITY: [number, string][] = [
  [60, 'F'],
  [50, 'E'],
  [40, 'W'],
];
/** What pino writes that is the header's, not a field. */
const HEADER_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'component']);

const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** One value as klog writes it after `key=`. */
function value(v: unknown): string {
  if (typeof v === 'string') {
    if (!v.includes('\n')) return goQuote(v);
    // klog's multi-line form: each line indented by a tab, closed by " >".
    return `<\n${v
      .split('\n')
      .map((l) => `\t${l}`)
      .join('\n')}\n >`;
  }
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return JSON.stringify(v);
}

/** The klog header for a line logged at `timeMs` by process `pid`. */
export function klogHeader(level: number, timeMs: number, pid: number, source: string): string {
  const sev = SEVERITY.find(([l]) => level >= l)?.[1] ?? 'I';
  const d = new Date(timeMs);
  const micros = String(d.getMilliseconds() * 1000).padStart(6, '0');
  return `${sev}${two(d.getMonth() + 1)}${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${micros} ${String(pid).padStart(7, ' ')} ${source}:0] `;
}

/** The text line (with its newline) for one pino JSON line; a line that is not JSON passes through. */
export function klogTextLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof rec.level === 'number' ? rec.level : 30;
  const time = typeof rec.time === 'number' ? rec.time : Date.now();
  const pid = typeof rec.pid === 'number' ? rec.pid : process.pid;
  const source = typeof rec.component === 'string' && rec.component ? rec.component : 'kubelet';
  let out = klogHeader(level, time, pid, source) + goQuote(typeof rec.msg === 'string' ? rec.msg : '');
  for (const [k, v] of Object.entries(rec)) if (!HEADER_KEYS.has(k) && v !== undefined) out += ` ${k}=${value(v)}`;
  return `${out}\n`;
}
