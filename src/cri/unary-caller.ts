/**
 * A unary gRPC caller for the kubelet's plugins (registration sockets, CSI drivers) on the lean
 * channel of h2-unary.ts: a failed call rejects with grpc-go's status text ("rpc error: code =
 * NotFound desc = …"), which upstream's messages and events embed.
 */
import { GrpcCallError, unaryChannel, type UnaryMethod } from './h2-unary.js';

/** grpc-go's code names, for Go's status text. */
const GO_CODE = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** A failed call as grpc-go's status error prints. */
export function goStatusError(err: unknown): Error {
  if (err instanceof GrpcCallError) return new Error(`rpc error: code = ${GO_CODE[err.code] ?? `Code(${err.code})`} desc = ${err.details}`);
  return err instanceof Error ? err : new Error(String(err));
}

/** Calls a unary service on a unix socket (a plugin's Registration service, a CSI driver); failures reject with Go's status text. */
export function unaryCaller(socketPath: string, methods: Record<string, UnaryMethod>, defaultTimeoutMs: number) {
  const channel = unaryChannel(`unix://${socketPath}`, { maxReceiveBytes: 4 * 1024 * 1024 });
  return {
    async call<T>(method: string, req: unknown, timeoutMs = defaultTimeoutMs): Promise<T> {
      try {
        return (await channel.call(methods[method], req, timeoutMs)) as T;
      } catch (err) {
        throw goStatusError(err);
      }
    },
    close: () => channel.close(),
  };
}
