/**
 * The node log query (upstream's NodeLogQuery, kubelet_server_journal.go): the query parameters of
 * `GET /logs/?query=…`, their checks with upstream's messages, and the journalctl command line they
 * become. Pure; running journalctl and reading files is node-log-journal.ts.
 *
 * A `query` value with a `/` or `\` names a file under the log directory; any other names a
 * service (journald unit, else a file by name heuristics). Options (sinceTime, untilTime,
 * tailLines, boot, pattern) apply to services only.
 */
import { messageOf } from '../lib/errors.js';
import { goAtoi } from '../lib/go-strconv.js';

/** Upstream's limits. */
export const MAX_TAIL_LINES = 100_000;
const MAX_SERVICE_LENGTH = 256;
const MAX_SERVICES = 4;
/** Characters a service name may not contain (reServiceNameUnsafeCharacters): it becomes a journalctl argument. */
const UNSAFE_SERVICE_CHARACTERS = /[^a-zA-Z\-_0-9@]+/;

/** A parsed RFC 3339 time: its instant and the wall clock at its own offset (what Go's Format prints). */
export interface QueryTime {
  ms: number;
  /** `2006-1-2 15:4:5` at the offset it was given in (upstream's dateLayout). */
  wall: string;
  /** Go's time.String() of it, for error messages. */
  text: string;
}

/** The options of a query (upstream's options struct). */
export interface LogQueryOptions {
  sinceTime?: QueryTime;
  untilTime?: QueryTime;
  tailLines?: number;
  boot?: number;
  pattern: string;
}

/** A node log query (upstream's nodeLogQuery). */
export interface NodeLogQuery extends LogQueryOptions {
  services: string[];
  files: string[];
}

/** Query parameters as Fastify parses them (a repeated name gives an array). */
export type QueryParams = Record<string, string | string[] | undefined>;

const all = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const first = (v: string | string[] | undefined): string => all(v)[0] ?? '';
/** Go's %q of a string (ASCII-safe enough for parameter values). */
const quote = (s: string) => JSON.stringify(s);
/** Go's %#v of a []string. */
const goStrings = (xs: readonly string[]) => `[]string{${xs.map(quote).join(', ')}}`;
const invalid = (field: string, shown: string, detail: string) => `${field}: Invalid value: ${shown}: ${detail}`;

/** Go's strconv.Atoi: the number, or its error. */
function atoi(s: string): { n: number } | { err: string } {
  try {
    return { n: goAtoi(s) };
  } catch (err) {
    return { err: messageOf(err) };
  }
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|([+-])(\d{2}):(\d{2}))$/;

/** Go's time.Parse(time.RFC3339, s); undefined when it does not parse. */
export function parseRfc3339(s: string): QueryTime | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate() || h > 23 || mi > 59 || se > 59)
    return undefined;
  const offMin = m[8] === 'Z' ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
  if (Math.abs(offMin) >= 24 * 60) return undefined;
  const frac = m[7] ? Number(m[7]) : 0;
  const ms = Date.UTC(y, mo - 1, d, h, mi, se) - offMin * 60_000 + Math.floor(frac * 1000);
  const p2 = (n: number) => String(n).padStart(2, '0');
  // A zone without a name prints its offset twice (Go's -0700 MST for a fixed zone); UTC by name.
  const offset = `${m[9]}${m[10]}${m[11]}`;
  const zone = offMin === 0 ? '+0000 UTC' : `${offset} ${offset}`;
  const fracText = m[7] ? m[7].replace(/0+$/, '').replace(/^\.$/, '') : '';
  return {
    ms,
    wall: `${y}-${mo}-${d} ${h}:${mi}:${se}`,
    text: `${y}-${p2(mo)}-${p2(d)} ${p2(h)}:${p2(mi)}:${p2(se)}${fracText} ${zone}`,
  };
}

/**
 * newNodeLogQuery: the query in `params`, or undefined when it asks for nothing (a plain file
 * request); errors are upstream's (answered 400).
 */
export function parseNodeLogQuery(params: QueryParams): { query?: NodeLogQuery; errors: string[] } {
  const errors: string[] = [];
  const q: NodeLogQuery = { services: [], files: [], pattern: '' };
  const queries = all(params.query);
  for (const v of queries) {
    if (/[/\\]/.test(v)) q.files.push(v);
    else if (v.trim() !== '') q.services.push(v);
  }
  if (params.query !== undefined && q.files.length === 0 && q.services.length === 0)
    errors.push(invalid('query', goStrings(queries), 'query cannot be empty'));
  for (const name of ['sinceTime', 'untilTime'] as const) {
    const v = first(params[name]);
    if (!v) continue;
    const t = parseRfc3339(v);
    if (t) q[name] = t;
    else errors.push(invalid(name, quote(v), 'invalid time format'));
  }
  for (const name of ['boot', 'tailLines'] as const) {
    const v = first(params[name]);
    if (!v) continue;
    const r = atoi(v);
    if ('n' in r) q[name] = r.n;
    else errors.push(invalid(name, quote(v), r.err));
  }
  q.pattern = first(params.pattern);
  if (errors.length) return { errors };
  const asked =
    q.services.length ||
    q.files.length ||
    q.sinceTime ||
    q.untilTime ||
    q.boot !== undefined ||
    q.tailLines !== undefined ||
    q.pattern;
  return { query: asked ? q : undefined, errors };
}

/** Whether any option is set (upstream's `n.options != (options{})`). */
export const hasOptions = (q: LogQueryOptions): boolean =>
  q.sinceTime !== undefined ||
  q.untilTime !== undefined ||
  q.tailLines !== undefined ||
  q.boot !== undefined ||
  q.pattern !== '';

/** Why `pattern` is not a regular expression Go's regexp/syntax (Perl flags) accepts; undefined when it is. */
export function patternProblem(pattern: string): string | undefined {
  const unsupported = /\(\?[=!]|\(\?<[=!]|\\[1-9]/.exec(pattern);
  if (unsupported) return `error parsing regexp: invalid or unsupported Perl syntax: \`${unsupported[0]}\``;
  try {
    new RegExp(pattern);
    return undefined;
  } catch (err) {
    return `error parsing regexp: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`;
  }
}

/**
 * nodeLogQuery.validate: upstream's checks (answered 406). `fileProblem` is what stat said of the
 * one queried file (`stat /var/log/x: no such file or directory`), found by the caller.
 */
export function validateNodeLogQuery(q: NodeLogQuery, fileProblem?: string): string[] {
  const errors: string[] = [];
  for (const s of q.services) {
    if (s.length > MAX_SERVICE_LENGTH) errors.push(invalid('query', quote(s), 'length must be less than 100'));
    else if (UNSAFE_SERVICE_CHARACTERS.test(s))
      errors.push(invalid('query', quote(s), 'input contains unsupported characters'));
  }
  if (q.services.length > MAX_SERVICES)
    errors.push(`query: Too many: ${q.services.length}: must have at most ${MAX_SERVICES} items`);
  if (q.files.length === 0 && q.services.length === 0)
    errors.push('query: Required value: cannot be empty with options');
  else if (q.files.length > 0 && q.services.length > 0)
    errors.push(
      invalid('query', quote(`[${q.files.join(' ')}], [${q.services.join(' ')}]`), 'cannot specify a file and service'),
    );
  else if (q.files.length > 1) errors.push(invalid('query', goStrings(q.files), 'cannot specify more than one file'));
  else if (q.files.length === 1 && hasOptions(q))
    errors.push(invalid('query', goStrings(q.files), 'cannot specify file with options'));
  else if (q.files.length === 1 && fileProblem) errors.push(invalid('query', goStrings(q.files), fileProblem));
  if (q.sinceTime && q.untilTime && q.sinceTime.ms > q.untilTime.ms)
    errors.push(invalid('untilTime', q.untilTime.text, 'must be after `sinceTime`'));
  if (q.boot !== undefined && q.boot > 0) errors.push(invalid('boot', String(q.boot), 'must be less than 1'));
  if (q.tailLines !== undefined && (q.tailLines < 0 || q.tailLines > MAX_TAIL_LINES))
    errors.push(invalid('tailLines', String(q.tailLines), `must be between 0 and ${MAX_TAIL_LINES}, inclusive`));
  const bad = patternProblem(q.pattern);
  if (bad) errors.push(invalid('pattern', quote(q.pattern), bad));
  return errors;
}

/**
 * getLoggingCmd (Linux): journalctl's arguments for `services`, in upstream's order. (Upstream's
 * `--until` prints the sinceTime, and panics without one; here it is the untilTime.)
 */
export function journalctlArgs(q: LogQueryOptions, services: readonly string[]): string[] {
  const args = ['--utc', '--no-pager', '--output=short-precise'];
  if (q.sinceTime) args.push(`--since=${q.sinceTime.wall}`);
  if (q.untilTime) args.push(`--until=${q.untilTime.wall}`);
  if (q.tailLines !== undefined) args.push('--pager-end', `--lines=${q.tailLines}`);
  for (const s of services) if (s) args.push(`--unit=${s}`);
  if (q.pattern) args.push(`--grep=${q.pattern}`);
  if (q.boot !== undefined) args.push('--boot', String(q.boot));
  return args;
}

/** The files a service's logs may be in, in the order tried (heuristicsCopyFileLogs). */
export const serviceLogFileNames = (service: string): string[] => [
  service,
  `${service}.log`,
  `${service}/${service}.log`,
];
