/**
 * The probes' plain-HTTP GET (upstream's probe transport: a new connection per request,
 * `Connection: close`, no compression): one write, the status line and headers parsed from the
 * first bytes, the body read to at most `maxBody` bytes, then the socket is closed. node:http's
 * client costs ~0.3 ms of CPU more per request (ClientRequest, agent and parser objects), and a
 * kubelet makes one request per httpGet probe. HTTPS goes through node:https (probe-handlers.ts).
 *
 * Bounded: response headers ≤ 64 KiB, body ≤ maxBody, the whole exchange ≤ timeoutMs.
 */
import net from 'node:net';

/** The response, as far as probes need it. */
export interface HttpGetResponse {
  status: number;
  location?: string;
  body: string;
}

const MAX_HEADER_BYTES = 64 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The request bytes; header names must be tokens and values free of CR, LF and NUL (else throws, in Go's wording). */
export function requestBytes(path: string, host: string, headers: [string, string][]): string {
  let hasHost = false;
  let head = '';
  for (const [name, value] of headers) {
    if (!TOKEN.test(name)) throw new Error(`net/http: invalid header field name ${JSON.stringify(name)}`);
    if (/[\r\n\0]/.test(value)) throw new Error(`net/http: invalid header field value for ${JSON.stringify(name)}`);
    if (name.toLowerCase() === 'host') {
      if (hasHost) continue;
      hasHost = true;
    }
    head += `${name}: ${value}\r\n`;
  }
  return `GET ${path} HTTP/1.1\r\n${hasHost ? '' : `Host: ${host}\r\n`}${head}Connection: close\r\n\r\n`;
}

interface Head {
  status: number;
  headers: Map<string, string>;
  bodyStart: number;
}

/** Parses a response head from `buf`; undefined while incomplete. 1xx interim responses are skipped. */
export function parseHead(buf: Buffer): Head | undefined | Error {
  let from = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', from);
    if (end < 0) return buf.length - from > MAX_HEADER_BYTES ? new Error(`server response headers exceeded ${MAX_HEADER_BYTES} bytes; aborted`) : undefined;
    const lines = buf.toString('latin1', from, end).split('\r\n');
    const m = /^HTTP\/\d\.\d (\d{3})(?: |$)/.exec(lines[0]);
    if (!m) return new Error(`malformed HTTP response ${JSON.stringify(lines[0].slice(0, 64))}`);
    const status = Number(m[1]);
    if (status >= 100 && status < 200 && status !== 101) {
      from = end + 4;
      continue;
    }
    const headers = new Map<string, string>();
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
    }
    return { status, headers, bodyStart: end + 4 };
  }
}

/** Decodes a chunked body as far as it goes; `done` once the last chunk is seen. */
export function dechunk(raw: Buffer): { data: Buffer; done: boolean } {
  const parts: Buffer[] = [];
  let i = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', i);
    if (eol < 0) return { data: Buffer.concat(parts), done: false };
    const size = parseInt(raw.toString('latin1', i, eol).split(';')[0], 16);
    if (!Number.isFinite(size) || size < 0) return { data: Buffer.concat(parts), done: true };
    if (size === 0) return { data: Buffer.concat(parts), done: true };
    const start = eol + 2;
    parts.push(raw.subarray(start, Math.min(raw.length, start + size)));
    if (start + size + 2 > raw.length) return { data: Buffer.concat(parts), done: false };
    i = start + size + 2;
  }
}

function bodyOf(head: Head, raw: Buffer, maxBody: number, eof: boolean): string | undefined {
  const noBody = head.status === 204 || head.status === 304;
  if (noBody) return '';
  const te = head.headers.get('transfer-encoding');
  if (te && /chunked/i.test(te)) {
    const d = dechunk(raw);
    return d.done || eof || d.data.length >= maxBody ? d.data.subarray(0, maxBody).toString('utf8') : undefined;
  }
  const cl = head.headers.get('content-length');
  const want = cl !== undefined && /^\d+$/.test(cl) ? Math.min(Number(cl), maxBody) : maxBody;
  return raw.length >= want || eof ? raw.subarray(0, want).toString('utf8') : undefined;
}

/** GETs `path` from host:port over plain TCP. Rejects with Go-worded errors (without the `Get "url": ` prefix). */
export function plainGet(o: {
  host: string;
  port: number;
  path: string;
  hostHeader: string;
  headers: [string, string][];
  timeoutMs: number;
  maxBody: number;
}): Promise<HttpGetResponse> {
  return new Promise((resolve, reject) => {
    // A request that cannot be sent (Go's wording) throws here, which rejects before any connect.
    const request = requestBytes(o.path, o.hostHeader, o.headers);
    const s = net.connect({ host: o.host, port: o.port });
    let buf: Buffer = Buffer.alloc(0);
    let head: Head | undefined;
    let settled = false;
    const settle = (err: Error | undefined, r?: HttpGetResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      if (err) reject(err);
      else resolve(r!);
    };
    const timer = setTimeout(() => settle(new Error('context deadline exceeded (Client.Timeout exceeded while awaiting headers)')), o.timeoutMs);
    const progress = (eof: boolean) => {
      if (!head) {
        const h = parseHead(buf);
        if (h instanceof Error) return settle(h);
        if (!h) return eof ? settle(new Error('EOF')) : undefined;
        head = h;
        buf = buf.subarray(h.bodyStart);
      }
      // A body framed to grow without end (a chunk-size line that never ends) is cut here.
      const body = bodyOf(head, buf, o.maxBody, eof || buf.length > o.maxBody + MAX_HEADER_BYTES);
      if (body !== undefined) settle(undefined, { status: head.status, location: head.headers.get('location'), body });
    };
    s.once('connect', () => s.write(request));
    s.on('data', (d: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      progress(false);
    });
    s.on('end', () => progress(true));
    s.on('error', (err: NodeJS.ErrnoException) => {
      const where = `${o.host.includes(':') ? `[${o.host}]` : o.host}:${o.port}`;
      if (err.code === 'ECONNREFUSED') return settle(new Error(`dial tcp ${where}: connect: connection refused`));
      if (err.code === 'ECONNRESET') return settle(new Error(`read tcp ${where}: read: connection reset by peer`));
      settle(new Error(err.message));
    });
  });
}
