/**
 * /containerLogs query → v1.PodLogOptions, decoded and validated as the Go kubelet does:
 * legacy `tail` maps to tailLines (`tail=all` = unlimited); undecodable values → 400
 * "Unable to decode query."; failed validation → 422.
 */
import { badRequest, invalid } from '../lib/errors.js';
import { parseRfc3339Ns } from '../lib/time.js';
import type { ContainerLogOptions } from './host.js';

const bool = (v: string) => {
  if (/^(1|t|T|TRUE|true|True)$/.test(v)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(v)) return false;
  return undefined;
};
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Go's strconv.ParseInt(v, 10, 64): undefined when not an integer or outside int64. */
const int = (v: string) => {
  if (!/^[-+]?\d+$/.test(v)) return undefined;
  const b = BigInt(v);
  return b < INT64_MIN || b > INT64_MAX ? undefined : Number(b);
};

/** v1.PodLogOptions' `stream` values. */
const LOG_STREAMS = ['Stdout', 'Stderr', 'All'];

/**
 * Parses the query (values may repeat; the first wins, as url.Values.Get). `stream` is validated as upstream's
 * ValidatePodLogOptions does whatever the gate; with `splitStreams` (PodLogsQuerySplitStreams) it also picks the lines.
 */
export function parseLogQuery(
  q: Record<string, string | string[] | undefined>,
  nowNs: bigint,
  o: { splitStreams?: boolean } = {},
): ContainerLogOptions {
  const get = (k: string) => {
    const v = q[k];
    return Array.isArray(v) ? v[0] : v;
  };
  const decodeErr = () => badRequest('Unable to decode query.');
  const opts: ContainerLogOptions = {};
  for (const k of ['follow', 'previous', 'timestamps', 'insecureSkipTLSVerifyBackend'] as const) {
    const v = get(k);
    if (v === undefined) continue;
    const b = v === '' ? true : bool(v);
    if (b === undefined) throw decodeErr();
    if (k !== 'insecureSkipTLSVerifyBackend') opts[k] = b;
  }
  let tail = get('tailLines');
  const legacy = get('tail');
  if (legacy !== undefined && legacy !== '') tail = legacy === 'all' ? undefined : legacy;
  const errs: string[] = [];
  if (tail !== undefined) {
    const n = int(tail);
    if (n === undefined) throw decodeErr();
    if (n < 0) errs.push('tailLines: Invalid value: must be greater than or equal to 0');
    opts.tailLines = n;
  }
  const lb = get('limitBytes');
  if (lb !== undefined) {
    const n = int(lb);
    if (n === undefined) throw decodeErr();
    if (n < 1) errs.push('limitBytes: Invalid value: must be greater than 0');
    opts.limitBytes = n;
  }
  const ss = get('sinceSeconds');
  const st = get('sinceTime');
  let sinceSeconds: number | undefined;
  if (ss !== undefined) {
    sinceSeconds = int(ss);
    if (sinceSeconds === undefined) throw decodeErr();
    if (sinceSeconds < 1) errs.push('sinceSeconds: Invalid value: must be greater than 0');
  }
  let sinceTimeNs: bigint | undefined;
  if (st !== undefined) {
    sinceTimeNs = parseRfc3339Ns(st);
    if (sinceTimeNs === undefined) throw decodeErr();
  }
  if (sinceSeconds !== undefined && sinceTimeNs !== undefined)
    errs.push('sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  const stream = get('stream');
  if (stream !== undefined) {
    if (!LOG_STREAMS.includes(stream))
      errs.push(
        `stream: Unsupported value: ${JSON.stringify(stream)}: supported values: ${LOG_STREAMS.map((s) => `"${s}"`).join(', ')}`,
      );
    else if (stream !== 'All' && opts.tailLines !== undefined)
      errs.push('stream: Forbidden: `tailLines` and specific `stream` are mutually exclusive for now');
    else if (stream !== 'All' && o.splitStreams) opts.stream = stream === 'Stdout' ? 'stdout' : 'stderr';
  }
  if (errs.length) throw invalid(`Invalid request: ${errs.join(', ')}`);
  if (sinceSeconds !== undefined) opts.sinceNs = nowNs - BigInt(sinceSeconds) * 1_000_000_000n;
  if (sinceTimeNs !== undefined) opts.sinceNs = sinceTimeNs;
  return opts;
}
