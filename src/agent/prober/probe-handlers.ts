/**
 * The probe handlers (upstream pkg/probe/{exec,http,tcp,grpc}), each bounded by the probe's
 * timeout and answering success or failure with upstream's output text:
 * - exec: CRI ExecSync with the timeout; exit 0 succeeds; a timeout fails;
 * - httpGet: host defaults to the pod IP, port by number or the container's port name, scheme,
 *   path, headers, `User-Agent: kube-probe/<major.minor>`; 2xx/3xx succeed; redirects are followed
 *   to the same host only (another host ends the probe with success, as upstream); HTTPS is not
 *   verified; the body read is capped at 10 KiB;
 * - tcpSocket: a TCP connect;
 * - grpc: grpc.health.v1.Health/Check with `service`; SERVING succeeds.
 */
import net from 'node:net';
import type { Container } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import { isCode, messageOf } from '../../lib/errors.js';
import { KUBERNETES_VERSION } from '../../version.js';
import { probeGet, type HttpGetResponse } from './http-get.js';
import { unaryChannel } from '../../cri/grpc-channel.js';
import { GrpcCallError, GrpcCode, goStatusMessage, type UnaryMethod } from '../../cri/grpc-status.js';

/** core/v1 Probe / LifecycleHandler actions. */
export interface ProbeAction {
  exec?: { command?: string[] };
  httpGet?: {
    path?: string;
    port: number | string;
    host?: string;
    scheme?: 'HTTP' | 'HTTPS';
    httpHeaders?: { name: string; value: string }[];
  };
  tcpSocket?: { port: number | string; host?: string };
  grpc?: { port: number; service?: string };
  sleep?: { seconds: number };
}

/** A probe's outcome and its output (the text of Unhealthy events). */
export interface ProbeOutcome {
  result: 'success' | 'failure';
  output: string;
  /** exec: the command's exit code. */
  exitCode?: number;
  /** A success upstream reports as probe.Warning (a redirect to another host, not followed): a ProbeWarning event. */
  warning?: boolean;
}

/** What a handler needs. */
export interface ProbeTarget {
  runtime: RuntimeService;
  containerId: string;
  container: Container;
  podIP: string;
  timeoutMs: number;
}

const USER_AGENT = httpGetUserAgent('probe');
const MAX_BODY = 10 * 1024;

/** A port by number or by the container's port name. */
export function resolvePort(port: number | string, c: Container): number | undefined {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

async function execProbe(cmd: string[], t: ProbeTarget): Promise<ProbeOutcome> {
  try {
    const r = await t.runtime.execSync(t.containerId, cmd, Math.max(1, Math.ceil(t.timeoutMs / 1000)));
    const output = Buffer.concat([Buffer.from(r.stdout ?? []), Buffer.from(r.stderr ?? [])]).toString('utf8');
    return r.exit_code === 0
      ? { result: 'success', output, exitCode: 0 }
      : {
          result: 'failure',
          output: output || `command ${JSON.stringify(cmd.join(' '))} exited with ${r.exit_code}`,
          exitCode: r.exit_code,
        };
  } catch (err) {
    if (isCode(err, 'Timeout') || /timed out|deadline/i.test(messageOf(err)))
      return { result: 'failure', output: `command ${JSON.stringify(cmd.join(' '))} timed out` };
    return { result: 'failure', output: messageOf(err) };
  }
}

function httpOnce(url: URL, headers: [string, string][], timeoutMs: number): Promise<HttpGetResponse> {
  return probeGet(url, headers, { timeoutMs, maxBody: MAX_BODY });
}

/**
 * The URL an httpGet probe or hook asks for (upstream formatURL): the spec's path parsed as a URL
 * reference, so that a query string stays a query (`/echo?msg=a` is not `/echo%3Fmsg=a`), on the
 * scheme, host and port given (a host in the path, `//other/x`, does not replace them). Pure.
 */
export function probeUrl(scheme: string, host: string, port: number, path: string): URL {
  const url = new URL(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`);
  const reference = new URL(path, 'http://path.invalid');
  url.pathname = reference.pathname;
  url.search = reference.search;
  return url;
}

/** The `User-Agent` of an httpGet action's request (upstream: `kube-probe/1.36`, `kube-lifecycle/1.36`). */
export function httpGetUserAgent(fragment: 'probe' | 'lifecycle'): string {
  return `kube-${fragment}/${KUBERNETES_VERSION.replace(/^v/, '').split('.').slice(0, 2).join('.')}`;
}

/**
 * The request of an httpGet action (upstream NewRequestForHTTPGetAction): its URL, and the spec's headers (repeats
 * kept) then `User-Agent` and `Accept: *\/*` unless the spec set them; or why there is none. Pure.
 */
export function httpGetRequest(
  a: NonNullable<ProbeAction['httpGet']>,
  t: { container: Container; podIP: string },
  userAgent: string,
): { url: URL; headers: [string, string][] } | { error: string } {
  const port = resolvePort(a.port, t.container);
  if (port === undefined) return { error: `unable to find port ${String(a.port)} in container ${t.container.name}` };
  const url = probeUrl((a.scheme ?? 'HTTP').toLowerCase(), a.host || t.podIP, port, a.path ?? '');
  const headers: [string, string][] = (a.httpHeaders ?? []).map((h) => [h.name, h.value]);
  const has = (n: string) => headers.some(([k]) => k.toLowerCase() === n);
  if (!has('user-agent')) headers.push(['User-Agent', userAgent]);
  if (!has('accept')) headers.push(['Accept', '*/*']);
  return { url, headers };
}

/**
 * GETs `url`, following redirects to the same host (at most 10); a redirect to another host is not followed and its
 * response is the answer (upstream's RedirectChecker(false)). Failures reject with Go's words, `Get "<url>": …`.
 */
export async function getFollowingLocalRedirects(
  url: URL,
  headers: [string, string][],
  deadline: number,
): Promise<{ response: HttpGetResponse; url: URL; offHost: boolean }> {
  for (let hops = 0; ; hops++) {
    let response: HttpGetResponse;
    try {
      response = await httpOnce(url, headers, Math.max(1, deadline - Date.now()));
    } catch (err) {
      throw new Error(`Get "${url.href}": ${messageOf(err)}`, { cause: err });
    }
    if (response.status < 300 || response.status >= 400 || !response.location) return { response, url, offHost: false };
    const next = new URL(response.location, url);
    if (next.hostname !== url.hostname) return { response, url, offHost: true };
    // Go's client stops at the tenth redirect, naming the request that got it.
    if (hops === 9) throw new Error(`Get "${url.href}": stopped after 10 redirects`);
    url = next;
  }
}

async function httpProbe(a: NonNullable<ProbeAction['httpGet']>, t: ProbeTarget): Promise<ProbeOutcome> {
  const request = httpGetRequest(a, t, USER_AGENT);
  if ('error' in request) return { result: 'failure', output: request.error };
  try {
    const { response, offHost } = await getFollowingLocalRedirects(
      request.url,
      request.headers,
      Date.now() + t.timeoutMs,
    );
    // Upstream's probe.Warning: a redirect to another host is not followed, counted as a success, told in a
    // ProbeWarning event.
    if (offHost)
      return {
        result: 'success',
        warning: true,
        output: `Probe terminated redirects, Response body: ${response.body}`,
      };
    if (response.status >= 200 && response.status < 400) return { result: 'success', output: response.body };
    return { result: 'failure', output: `HTTP probe failed with statuscode: ${response.status}` };
  } catch (err) {
    return { result: 'failure', output: messageOf(err) };
  }
}

function tcpProbe(a: NonNullable<ProbeAction['tcpSocket']>, t: ProbeTarget): Promise<ProbeOutcome> {
  const port = resolvePort(a.port, t.container);
  const host = a.host || t.podIP;
  if (port === undefined)
    return Promise.resolve({
      result: 'failure',
      output: `unable to find port ${String(a.port)} in container ${t.container.name}`,
    });
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: t.timeoutMs });
    const done = (o: ProbeOutcome) => {
      s.destroy();
      resolve(o);
    };
    s.once('connect', () => done({ result: 'success', output: '' }));
    s.once('timeout', () => done({ result: 'failure', output: `dial tcp ${host}:${port}: i/o timeout` }));
    s.once('error', (err: NodeJS.ErrnoException) =>
      done({
        result: 'failure',
        output: `dial tcp ${host}:${port}: connect: ${err.code === 'ECONNREFUSED' ? 'connection refused' : err.message}`,
      }),
    );
  });
}

/** grpc.health.v1 HealthCheckRequest { string service = 1; } */
function encodeHealthRequest(service: string): Buffer {
  const s = Buffer.from(service, 'utf8');
  if (!s.length) return Buffer.alloc(0);
  const len: number[] = [];
  for (let n = s.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([0x0a, ...len]), s]);
}

/** grpc.health.v1 HealthCheckResponse { ServingStatus status = 1; } → the status number (0 when absent). */
function decodeHealthStatus(b: Buffer): number {
  for (let i = 0; i < b.length;) {
    const tag = b[i++];
    let v = 0;
    let shift = 0;
    if ((tag & 7) === 0) {
      for (;;) {
        const x = b[i++];
        v |= (x & 0x7f) << shift;
        if (!(x & 0x80)) break;
        shift += 7;
      }
      if (tag >> 3 === 1) return v;
      continue;
    }
    if ((tag & 7) === 2) {
      let n = 0;
      shift = 0;
      for (;;) {
        const x = b[i++];
        n |= (x & 0x7f) << shift;
        if (!(x & 0x80)) break;
        shift += 7;
      }
      i += n;
      continue;
    }
    break;
  }
  return 0;
}

const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

const HEALTH_CHECK: UnaryMethod = {
  path: '/grpc.health.v1.Health/Check',
  requestSerialize: (service) => encodeHealthRequest(service as string),
  responseDeserialize: (b) => decodeHealthStatus(b),
};

/** grpc.health.v1 Check over the project's own unary gRPC client (a new connection per probe, as upstream). */
async function grpcProbe(a: NonNullable<ProbeAction['grpc']>, t: ProbeTarget): Promise<ProbeOutcome> {
  const addr = `${t.podIP.includes(':') ? `[${t.podIP}]` : t.podIP}:${a.port}`;
  const channel = unaryChannel(addr, { maxReceiveBytes: 64 * 1024 });
  const within = `${t.timeoutMs / 1000}s`;
  try {
    const st = (await channel.call(HEALTH_CHECK, a.service ?? '', t.timeoutMs)) as number;
    return st === 1
      ? { result: 'success', output: '' }
      : { result: 'failure', output: `service unhealthy (responded with "${SERVING_STATUS[st] ?? st}")` };
  } catch (err) {
    const code = err instanceof GrpcCallError ? err.code : GrpcCode.UNKNOWN;
    const message = err instanceof GrpcCallError ? err.details : messageOf(err);
    if (code === GrpcCode.DEADLINE_EXCEEDED)
      return { result: 'failure', output: `timeout: health rpc did not complete within ${within}` };
    if (code === GrpcCode.UNIMPLEMENTED)
      return {
        result: 'failure',
        output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${message}`,
      };
    if (code === GrpcCode.UNAVAILABLE && /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/.test(message))
      return {
        result: 'failure',
        output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${within}: ${message}`,
      };
    return {
      result: 'failure',
      output: `error: health rpc probe failed: ${goStatusMessage(code, message)}`,
    };
  } finally {
    channel.close();
  }
}

/** Runs one probe action. Never throws. */
export async function runProbeAction(a: ProbeAction, t: ProbeTarget): Promise<ProbeOutcome> {
  if (a.exec?.command?.length) return execProbe(a.exec.command, t);
  if (a.httpGet) return httpProbe(a.httpGet, t);
  if (a.tcpSocket) return tcpProbe(a.tcpSocket, t);
  if (a.grpc) return grpcProbe(a.grpc, t);
  return { result: 'failure', output: 'missing probe handler' };
}
