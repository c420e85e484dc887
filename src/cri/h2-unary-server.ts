/**
 * A lean gRPC unary server on node:http2 over a unix socket, the counterpart of h2-unary.ts. It
 * serves the kubelet's pod-resources API and the process-runtime daemon's CRI; grpc-js (~13 MB of
 * RSS loaded) is not needed for unary calls. A request body is bounded (4 MiB, gRPC's default);
 * an unknown method answers UNIMPLEMENTED; a handler (sync or async) that throws a GrpcCallError
 * answers its status, anything else UNKNOWN.
 */
import http2 from 'node:http2';
import { GrpcCallError, GrpcCode, grpcFrame, unframe } from './h2-unary.js';

/** One unary method: its codecs and its handler. */
export interface UnaryHandler {
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(res: unknown): Buffer;
  /** `signal` is aborted when the client cancels the call or goes away before it is answered. */
  handle(req: unknown, signal: AbortSignal): unknown;
}

/** A handler's result, or the error it threw, as a gRPC frame or a GrpcCallError. */
async function answer(m: UnaryHandler, req: unknown, signal: AbortSignal): Promise<Buffer | GrpcCallError> {
  try {
    return grpcFrame(m.responseSerialize(await m.handle(req, signal)));
  } catch (err) {
    return err instanceof GrpcCallError ? err : new GrpcCallError(GrpcCode.UNKNOWN, String(err));
  }
}

const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Serves `methods` (by HTTP/2 path, "/pkg.Service/Method") on the unix socket `path`. */
export async function serveUnary(path: string, methods: Record<string, UnaryHandler>): Promise<{ close(): Promise<void> }> {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    s.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const cancelled = new AbortController();
    stream.once('close', () => cancelled.abort());
    const fail = (err: GrpcCallError) => {
      if (stream.destroyed || stream.closed) return;
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(err.code), 'grpc-message': encodeURIComponent(err.details) },
        { endStream: true },
      );
    };
    const m = methods[String(headers[':path'])];
    if (!m) return fail(new GrpcCallError(GrpcCode.UNIMPLEMENTED, `unknown method ${String(headers[':path'])}`));
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES + 5)
        fail(new GrpcCallError(GrpcCode.RESOURCE_EXHAUSTED, `Received message larger than max (${size - 5} vs. ${MAX_REQUEST_BYTES})`));
      else chunks.push(c);
    });
    stream.on('end', () => {
      if (size > MAX_REQUEST_BYTES + 5) return;
      const payload = unframe(Buffer.concat(chunks, size));
      if (payload instanceof GrpcCallError) return fail(payload);
      let req: unknown;
      try {
        req = m.requestDeserialize(payload);
      } catch (err) {
        return fail(new GrpcCallError(GrpcCode.INTERNAL, `error unmarshalling request: ${String(err)}`));
      }
      void answer(m, req, cancelled.signal).then((out) => {
        if (out instanceof GrpcCallError) return fail(out);
        if (stream.destroyed || stream.closed) return;
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(out);
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.close();
      }),
  };
}
