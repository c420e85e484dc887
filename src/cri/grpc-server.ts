/**
 * Serves unary gRPC methods through @grpc/grpc-js on a unix socket: the process-runtime daemon's
 * CRI and the kubelet's pod-resources API. A request is bounded (4 MiB, gRPC's default); an
 * unknown method answers UNIMPLEMENTED; a handler (sync or async) that throws a GrpcCallError
 * answers its status, anything else UNKNOWN; a handler's signal is aborted when its client cancels
 * the call or goes away. The socket's mode is set whatever the process's umask: 0600 by default (the kubelet's
 * pod-resources and device plugin sockets, which upstream's umask of 022 leaves to root alone), 0660 for the
 * runtime's CRI socket, as containerd's. A client that can connect to the runtime's socket can run anything as root.
 */
import { chmod } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { GrpcCallError, GrpcCode } from './grpc-status.js';

/** One unary method: its codecs and its handler. */
export interface UnaryHandler {
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(res: unknown): Buffer;
  /** `signal` is aborted when the client cancels the call or goes away before it is answered. */
  handle(req: unknown, signal: AbortSignal): unknown;
}

/** Serves `methods` (by path, "/pkg.Service/Method") on the unix socket `path`, of the file mode `mode`. */
export async function serveUnary(
  path: string,
  methods: Record<string, UnaryHandler>,
  mode = 0o600,
): Promise<{ close(): Promise<void> }> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  for (const [name, m] of Object.entries(methods)) {
    const handler: grpc.handleUnaryCall<unknown, unknown> = (call, callback) => {
      const cancelled = new AbortController();
      call.once('cancelled', () => cancelled.abort());
      Promise.resolve()
        .then(() => m.handle(call.request, cancelled.signal))
        .then(
          (response) => callback(null, response),
          (err: unknown) => {
            const e = err instanceof GrpcCallError ? err : new GrpcCallError(GrpcCode.UNKNOWN, String(err));
            callback({ code: e.code, details: e.details, metadata: new grpc.Metadata() });
          },
        );
    };
    server.register(
      name,
      handler,
      (r: unknown) => m.responseSerialize(r),
      (b: Buffer) => m.requestDeserialize(b),
      'unary',
    );
  }
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${path}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  await chmod(path, mode).catch((err: unknown) => {
    server.forceShutdown();
    throw err;
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Calls still open (a long ExecSync) are not waited for.
        setTimeout(() => server.forceShutdown(), 1000).unref();
      }),
  };
}
