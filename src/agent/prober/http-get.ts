/**
 * The GET of httpGet probes and hooks, on node:http / node:https as upstream's probe transport:
 * a new connection per request (`Connection: close`), the spec's headers with repeats kept (a
 * spec's Host replaces the default), TLS unverified, and bounds against an untrusted pod: response
 * headers ≤ 64 KiB, the body read to at most `maxBody` bytes (then the connection is closed), the
 * whole exchange ≤ `timeoutMs`. Failures reject with Go's words (without the `Get "url": ` prefix).
 */
import http from 'node:http';
import https from 'node:https';

/** The response, as far as probes need it. */
export interface HttpGetResponse {
  status: number;
  location?: string;
  body: string;
}

/** Go's http.Transport MaxResponseHeaderBytes as the prober sets it. */
export const MAX_HEADER_BYTES = 64 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The request's headers by name (repeats kept, the first Host only); a name or value Go would refuse throws, in Go's
 * words. Pure.
 */
export function requestHeaders(headers: [string, string][]): Record<string, string | string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of headers) {
    if (!TOKEN.test(name)) throw new Error(`net/http: invalid header field name ${JSON.stringify(name)}`);
    if (/[\r\n\0]/.test(value)) throw new Error(`net/http: invalid header field value for ${JSON.stringify(name)}`);
    const key = name.toLowerCase() === 'host' ? 'Host' : name;
    if (key === 'Host' && out.Host) continue;
    (out[key] ??= []).push(value);
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, k === 'Host' || v.length === 1 ? v[0] : v]));
}

/**
 * The Host header Go's probe request carries: the URL's host with its port, which upstream's
 * formatURL always writes (the WHATWG URL leaves a default port out). Pure.
 */
export function probeHostHeader(url: URL): string {
  return url.port ? url.host : `${url.host}:${url.protocol === 'https:' ? 443 : 80}`;
}

/** Go's error for an HTTPS request a server answered in plain HTTP (upstream's lifecycle hooks fall back on it). */
export const HTTP_RESPONSE_TO_HTTPS_CLIENT = 'http: server gave HTTP response to HTTPS client';

/** A socket or parser error in Go's words. */
function goError(err: NodeJS.ErrnoException, where: string): Error {
  if (err.code === 'ECONNREFUSED') return new Error(`dial tcp ${where}: connect: connection refused`);
  if (err.code === 'ECONNRESET' && err.message === 'socket hang up') return new Error('EOF');
  if (err.code === 'ECONNRESET') return new Error(`read tcp ${where}: read: connection reset by peer`);
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return new Error(`net/http: server response headers exceeded ${MAX_HEADER_BYTES} bytes; aborted`);
  if (err.code?.startsWith('HPE_')) return new Error(`net/http: malformed HTTP response (${err.message})`);
  // TLS to a server that is not speaking it: what Go's client says when that server answers in plain HTTP.
  if (err.code === 'EPROTO' && /wrong version number/.test(err.message))
    return new Error(HTTP_RESPONSE_TO_HTTPS_CLIENT);
  return new Error(err.message);
}

/** GETs `url` (http: or https:). */
export function probeGet(
  url: URL,
  headers: [string, string][],
  o: { timeoutMs: number; maxBody: number },
): Promise<HttpGetResponse> {
  return new Promise((resolve, reject) => {
    const where = url.port ? url.host : `${url.host}:${url.protocol === 'https:' ? 443 : 80}`;
    let settled = false;
    const settle = (err: Error | undefined, r?: HttpGetResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      if (err) reject(err);
      else resolve(r!);
    };
    const options: https.RequestOptions = {
      method: 'GET',
      headers: { Host: probeHostHeader(url), ...requestHeaders(headers) },
      agent: false,
      maxHeaderSize: MAX_HEADER_BYTES,
      ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
    };
    const request = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () =>
        settle(undefined, {
          status: res.statusCode ?? 0,
          location: res.headers.location,
          body: Buffer.concat(chunks).subarray(0, o.maxBody).toString('utf8'),
        });
      res.on('data', (d: Buffer) => {
        chunks.push(d);
        size += d.length;
        // Enough for the probe's output: the rest is not read.
        if (size >= o.maxBody) done();
      });
      res.on('end', done);
      res.on('aborted', done);
      res.on('error', done);
    });
    const timer = setTimeout(
      () => settle(new Error('context deadline exceeded (Client.Timeout exceeded while awaiting headers)')),
      o.timeoutMs,
    );
    request.on('error', (err: NodeJS.ErrnoException) => settle(goError(err, where)));
    request.end();
  });
}
