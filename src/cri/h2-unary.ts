/**
 * A lean gRPC unary client on node:http2 — the only kind of call the kubelet makes to a CRI
 * runtime. One HTTP/2 session per target, opened on the first call and again on the next call
 * after it closed (a restarted runtime is picked up without backoff state); every call carries a
 * deadline (`grpc-timeout`, enforced locally too); the status comes from the trailers (or a
 * trailers-only response); a response larger than `maxReceiveBytes` is refused.
 *
 * Why not @grpc/grpc-js: its call stack (interceptors, retries, resolver, load balancer,
 * subchannel, channelz) costs ~1 ms of CPU per unary call, and a kubelet makes several calls per
 * second per 100 pods (PLEG relist, stats, exec probes). The wire format is the same; the protobuf
 * (de)serializers are proto-loader's. Its server counterpart is h2-unary-server.ts.
 */
import { longTimeout } from '../lib/clock.js';
import http2 from 'node:http2';
import net from 'node:net';

/** gRPC status codes (google.rpc.Code). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const CODE_NAME = Object.fromEntries(Object.entries(GrpcCode).map(([k, v]) => [v, k])) as Record<number, string>;

/** A failed call: the gRPC status code and the server's (or our) details. */
export class GrpcCallError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(`${code} ${CODE_NAME[code] ?? 'UNKNOWN'}: ${details}`);
  }
}

/** A unary method: its HTTP/2 path and its message codecs. */
export interface UnaryMethod {
  path: string;
  requestSerialize(req: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
}

/** A connection to one target. */
/**
 * A `grpc-timeout` header value for `ms`: at most 8 digits, as the gRPC wire format requires (a
 * peer refuses more), in the finest unit that fits (milliseconds up to ~27.8 hours, then seconds,
 * minutes, hours), rounded up. Pure.
 */
export function grpcTimeout(ms: number): string {
  const max = 99_999_999;
  const value = Math.max(1, Math.ceil(ms));
  if (value <= max) return `${value}m`;
  for (const [unit, size] of [
    ['S', 1000],
    ['M', 60_000],
    ['H', 3_600_000],
  ] as const) {
    const n = Math.ceil(value / size);
    if (n <= max) return `${n}${unit}`;
  }
  return `${max}H`;
}

export interface UnaryChannel {
  /** One unary call with a deadline of `timeoutMs` (Infinity: none); `signal` cancels it (RST_STREAM CANCEL, as grpc-go). */
  call(m: UnaryMethod, req: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
  close(): void;
}

/** A message as one gRPC length-prefixed frame (uncompressed). */
export function grpcFrame(payload: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(5 + payload.length);
  frame[0] = 0;
  frame.writeUInt32BE(payload.length, 1);
  payload.copy(frame, 5);
  return frame;
}

/** The one message of a unary body, or why there is none. */
export function unframe(body: Buffer): Buffer | GrpcCallError {
  if (body.length < 5) return new GrpcCallError(GrpcCode.UNIMPLEMENTED, 'No message received');
  if (body[0] !== 0) return new GrpcCallError(GrpcCode.INTERNAL, 'Compressed messages are not supported');
  if (body.length !== 5 + body.readUInt32BE(1)) return new GrpcCallError(GrpcCode.INTERNAL, 'Malformed message framing');
  return body.subarray(5);
}

/** "unix:///p", "unix:/p", "unix:p" or "/p" → a socket path; "host:port" (optionally dns:///) → TCP. */
export function parseTarget(target: string): { path: string } | { host: string; port: number } {
  if (target.startsWith('unix://')) return { path: target.slice('unix://'.length) };
  if (target.startsWith('unix:')) return { path: target.slice('unix:'.length) };
  if (target.startsWith('/')) return { path: target };
  const hp = target.replace(/^dns:(\/\/\/)?/, '');
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(hp);
  if (!m) throw new Error(`unsupported gRPC target ${JSON.stringify(target)}`);
  return { host: m[1], port: Number(m[2]) };
}

/** HTTP status of a non-gRPC answer → gRPC code, as grpc-go does (http_util.go). */
function httpToGrpc(status: number): number {
  if (status === 400) return GrpcCode.INTERNAL;
  if (status === 401) return GrpcCode.UNAUTHENTICATED;
  if (status === 403) return GrpcCode.PERMISSION_DENIED;
  if (status === 404) return GrpcCode.UNIMPLEMENTED;
  if (status === 429 || status === 502 || status === 503 || status === 504) return GrpcCode.UNAVAILABLE;
  return GrpcCode.UNKNOWN;
}

function decodeMessage(v: string | string[] | undefined): string {
  const s = Array.isArray(v) ? v.join(',') : (v ?? '');
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Opens (lazily) a channel to `target`. */
export function unaryChannel(target: string, o: { maxReceiveBytes: number }): UnaryChannel {
  const where = parseTarget(target);
  const authority = 'path' in where ? 'http://localhost' : `http://${where.host.includes(':') ? `[${where.host}]` : where.host}:${where.port}`;
  let session: http2.ClientHttp2Session | undefined;
  let closed = false;

  const sessionNow = (): http2.ClientHttp2Session => {
    if (session && !session.closed && !session.destroyed) return session;
    const s = http2.connect(authority, {
      createConnection: () => ('path' in where ? net.connect(where.path) : net.connect(where.port, where.host)),
      settings: { enablePush: false },
    });
    // Errors reach the calls through their streams; the session only has to be forgotten.
    const forget = () => {
      if (session === s) session = undefined;
    };
    s.on('error', forget);
    s.on('close', forget);
    s.on('goaway', forget);
    s.unref(); // an idle channel never holds the process; a pending call's deadline timer does
    session = s;
    return s;
  };

  const call = (m: UnaryMethod, req: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown> =>
    new Promise((resolve, reject) => {
      if (closed) return reject(new GrpcCallError(GrpcCode.UNAVAILABLE, 'Channel has been shut down'));
      if (signal?.aborted) return reject(new GrpcCallError(GrpcCode.CANCELLED, 'Cancelled on client'));
      let payload: Buffer;
      try {
        payload = m.requestSerialize(req);
      } catch (err) {
        return reject(new GrpcCallError(GrpcCode.INTERNAL, `Request message serialization failure: ${String(err)}`));
      }
      const frame = grpcFrame(payload);
      // A call without a deadline (Infinity): no grpc-timeout, no timer (upstream's PullImage, ExecSync without a timeout).
      const deadline = Number.isFinite(timeoutMs);
      let stream: http2.ClientHttp2Stream;
      try {
        stream = sessionNow().request(
          {
            ':method': 'POST',
            ':path': m.path,
            'content-type': 'application/grpc',
            te: 'trailers',
            ...(deadline ? { 'grpc-timeout': grpcTimeout(timeoutMs) } : {}),
          },
          { endStream: false },
        );
      } catch (err) {
        session = undefined;
        return reject(new GrpcCallError(GrpcCode.UNAVAILABLE, String(err)));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let httpStatus = 0;
      let status: number | undefined;
      let message = '';
      let failure: GrpcCallError | undefined;
      let done = false;
      const finish = (err: GrpcCallError | undefined, value?: unknown) => {
        if (done) return;
        done = true;
        cancelTimer?.();
        signal?.removeEventListener('abort', onCancel);
        if (err) reject(err);
        else resolve(value);
      };
      const abort = (err: GrpcCallError) => {
        finish(err);
        stream.close(http2.constants.NGHTTP2_CANCEL);
      };
      const cancelTimer = deadline ? longTimeout(() => abort(new GrpcCallError(GrpcCode.DEADLINE_EXCEEDED, 'Deadline exceeded')), timeoutMs) : undefined;
      const onCancel = () => abort(new GrpcCallError(GrpcCode.CANCELLED, 'Cancelled on client'));
      signal?.addEventListener('abort', onCancel, { once: true });
      const readStatus = (h: http2.IncomingHttpHeaders) => {
        const s = h['grpc-status'];
        if (s === undefined) return;
        status = Number(s);
        message = decodeMessage(h['grpc-message']);
      };
      stream.on('response', (h) => {
        httpStatus = Number(h[':status']);
        readStatus(h);
      });
      stream.on('trailers', readStatus);
      stream.on('data', (c: Buffer) => {
        size += c.length;
        if (size > o.maxReceiveBytes + 5)
          abort(new GrpcCallError(GrpcCode.RESOURCE_EXHAUSTED, `Received message larger than max (${size - 5} vs. ${o.maxReceiveBytes})`));
        else chunks.push(c);
      });
      stream.on('error', (err: Error) => {
        failure ??= new GrpcCallError(GrpcCode.UNAVAILABLE, err.message);
      });
      stream.on('close', () => {
        if (done) return;
        if (status === undefined) {
          if (httpStatus && httpStatus !== 200) return finish(new GrpcCallError(httpToGrpc(httpStatus), `Received HTTP status code ${httpStatus}`));
          return finish(failure ?? new GrpcCallError(GrpcCode.UNAVAILABLE, `Connection dropped (stream closed with code ${stream.rstCode ?? 0})`));
        }
        if (status !== GrpcCode.OK) return finish(new GrpcCallError(status, message));
        const payload = unframe(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
        if (payload instanceof GrpcCallError) return finish(payload);
        try {
          finish(undefined, m.responseDeserialize(payload));
        } catch (err) {
          finish(new GrpcCallError(GrpcCode.INTERNAL, `Response message parsing error: ${String(err)}`));
        }
      });
      stream.end(frame);
    });

  return {
    call,
    close: () => {
      closed = true;
      session?.close();
      session = undefined;
    },
  };
}
