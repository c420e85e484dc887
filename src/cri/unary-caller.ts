/**
 * A unary gRPC caller for the kubelet's plugins (registration sockets, CSI drivers) on a grpc-js
 * channel (grpc-channel.ts): a failed call rejects with grpc-go's status text ("rpc error: code =
 * NotFound desc = …"), which upstream's messages and events embed.
 */
import { unaryChannel } from './grpc-channel.js';
import { GrpcCallError, GrpcCode, goCodeString, goStatusMessage, type UnaryMethod } from './grpc-status.js';

/** grpc-go's name of a call's outcome: "OK", "NotFound", "Unavailable"… */
export function goCodeName(err: unknown): string {
  if (!err) return 'OK';
  return err instanceof GrpcCallError ? goCodeString(err.code) : 'Unknown';
}

/**
 * A failed call, its message as grpc-go's status error prints it; `code` is the gRPC code (UNKNOWN when the failure was
 * not a gRPC status).
 */
export class GoStatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A failed call as grpc-go's status error prints. */
export function goStatusError(err: unknown): GoStatusError {
  if (err instanceof GrpcCallError) return new GoStatusError(err.code, goStatusMessage(err.code, err.details));
  return new GoStatusError(GrpcCode.UNKNOWN, err instanceof Error ? err.message : String(err));
}

/**
 * upstream csi isFinalError: whether a failed call certainly did nothing. Canceled,
 * DeadlineExceeded, Unavailable, ResourceExhausted and Aborted leave the operation in an uncertain
 * state (the driver may still finish it), so what it may have done must be undone later.
 */
export function isFinalError(err: unknown): boolean {
  if (!(err instanceof GoStatusError)) return true;
  const uncertain: number[] = [
    GrpcCode.CANCELLED,
    GrpcCode.DEADLINE_EXCEEDED,
    GrpcCode.UNAVAILABLE,
    GrpcCode.RESOURCE_EXHAUSTED,
    GrpcCode.ABORTED,
  ];
  return !uncertain.includes(err.code);
}

/**
 * Calls a unary service on a unix socket (a plugin's Registration service, a CSI driver); failures
 * reject with Go's status text. `observe` sees every call: its full method ("/csi.v1.Node/…"),
 * grpc-go's code name and its duration (upstream's metrics interceptor).
 */
export function unaryCaller(
  socketPath: string,
  methods: Record<string, UnaryMethod>,
  defaultTimeoutMs: number,
  observe?: (o: { method: string; code: string; seconds: number }) => void,
) {
  const channel = unaryChannel(`unix://${socketPath}`, { maxReceiveBytes: 4 * 1024 * 1024 });
  return {
    async call<T>(method: string, req: unknown, timeoutMs = defaultTimeoutMs): Promise<T> {
      const t0 = performance.now();
      let failure: unknown;
      try {
        return (await channel.call(methods[method], req, timeoutMs)) as T;
      } catch (err) {
        failure = err;
        throw goStatusError(err);
      } finally {
        observe?.({
          method: methods[method].path,
          code: goCodeName(failure),
          seconds: (performance.now() - t0) / 1000,
        });
      }
    },
    close: () => channel.close(),
  };
}
