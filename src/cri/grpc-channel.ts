/**
 * Unary gRPC calls through @grpc/grpc-js, for every gRPC peer the kubelet calls: the CRI runtime
 * and image services, plugin registration sockets, CSI drivers, gRPC health probes. One channel
 * per target; every call carries its deadline (none for Infinity) and can be cancelled; a response
 * larger than `maxReceiveBytes` is refused. A failed call rejects with a GrpcCallError.
 */
import * as grpc from '@grpc/grpc-js';
import { GrpcCallError, GrpcCode, type UnaryMethod } from './grpc-status.js';

/** A connection to one target. */
export interface UnaryChannel {
  /**
   * One unary call with a deadline of `timeoutMs` (Infinity: none); `signal` cancels it (CANCELLED, as grpc-go's
   * context).
   */
  call(m: UnaryMethod, req: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
  close(): void;
}

/**
 * "unix:///p", "unix:/p", "unix:p" or "/p" → grpc-js's unix target; "host:port" (optionally dns:///) as it is. Pure.
 */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return `unix://${endpoint.slice('unix://'.length)}`;
  if (endpoint.startsWith('unix:')) return `unix://${endpoint.slice('unix:'.length)}`;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  if (!/^(dns:(\/\/\/)?)?\[?[^\]]*?\]?:\d+$/.test(endpoint))
    throw new Error(`unsupported gRPC target ${JSON.stringify(endpoint)}`);
  return endpoint;
}

const identity = (b: Buffer) => b;

/** Opens (lazily: grpc-js connects on the first call) a channel to `endpoint`. */
export function unaryChannel(endpoint: string, o: { maxReceiveBytes: number }): UnaryChannel {
  const client = new grpc.Client(grpcTarget(endpoint), grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': o.maxReceiveBytes,
    'grpc.max_send_message_length': -1,
    // A runtime that restarts is found again within seconds (grpc-js's default backoff grows to 2 min).
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 2000,
    // Unix sockets: the authority is not a host name.
    ...(endpoint.includes(':') && !endpoint.startsWith('unix') && !endpoint.startsWith('dns')
      ? {}
      : { 'grpc.default_authority': 'localhost' }),
  });
  let closed = false;
  return {
    call: (m, req, timeoutMs, signal) =>
      new Promise((resolve, reject) => {
        if (closed) return reject(new GrpcCallError(GrpcCode.UNAVAILABLE, 'Channel has been shut down'));
        if (signal?.aborted) return reject(new GrpcCallError(GrpcCode.CANCELLED, 'Cancelled on client'));
        let payload: Buffer;
        try {
          payload = m.requestSerialize(req);
        } catch (err) {
          return reject(new GrpcCallError(GrpcCode.INTERNAL, `Request message serialization failure: ${String(err)}`));
        }
        const options: grpc.CallOptions = Number.isFinite(timeoutMs)
          ? { deadline: Date.now() + Math.max(1, timeoutMs) }
          : {};
        const call = client.makeUnaryRequest(m.path, identity, identity, payload, options, (err, response) => {
          signal?.removeEventListener('abort', onCancel);
          if (err) return reject(new GrpcCallError(err.code, err.details));
          try {
            resolve(m.responseDeserialize(response!));
          } catch (e) {
            reject(new GrpcCallError(GrpcCode.INTERNAL, `Response message parsing error: ${String(e)}`));
          }
        });
        const onCancel = () => call.cancel();
        signal?.addEventListener('abort', onCancel, { once: true });
      }),
    close: () => {
      closed = true;
      client.close();
    },
  };
}
