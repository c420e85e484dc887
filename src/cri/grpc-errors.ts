/** Translation between gRPC status codes and the error catalog, in both directions. */
import { GrpcCallError, GrpcCode as Code, goStatusMessage } from './grpc-status.js';
import { KubeletError, messageOf, type ErrorCode } from '../lib/errors.js';

const toCatalog: Partial<Record<number, ErrorCode>> = {
  [Code.NOT_FOUND]: 'NotFound',
  [Code.INVALID_ARGUMENT]: 'BadRequest',
  [Code.FAILED_PRECONDITION]: 'BadRequest',
  [Code.UNIMPLEMENTED]: 'NotImplemented',
  [Code.UNAVAILABLE]: 'Unavailable',
  [Code.DEADLINE_EXCEEDED]: 'Timeout',
  [Code.CANCELLED]: 'Cancelled',
  [Code.ALREADY_EXISTS]: 'AlreadyExists',
  [Code.PERMISSION_DENIED]: 'Forbidden',
  [Code.UNAUTHENTICATED]: 'Unauthorized',
  [Code.RESOURCE_EXHAUSTED]: 'TooManyRequests',
};

const toGrpc: Record<ErrorCode, number> = {
  NotFound: Code.NOT_FOUND,
  BadRequest: Code.INVALID_ARGUMENT,
  Invalid: Code.INVALID_ARGUMENT,
  MethodNotAllowed: Code.UNIMPLEMENTED,
  NotImplemented: Code.UNIMPLEMENTED,
  Unavailable: Code.UNAVAILABLE,
  Unauthorized: Code.UNAUTHENTICATED,
  Forbidden: Code.PERMISSION_DENIED,
  Conflict: Code.ABORTED,
  AlreadyExists: Code.ALREADY_EXISTS,
  Timeout: Code.DEADLINE_EXCEEDED,
  Cancelled: Code.CANCELLED,
  TooManyRequests: Code.RESOURCE_EXHAUSTED,
  RequestEntityTooLarge: Code.RESOURCE_EXHAUSTED,
  Internal: Code.INTERNAL,
};

/** A gRPC client error as a KubeletError (message = the runtime's details). */
export function fromGrpcError(err: { code: number; details?: string; message: string }, method: string): KubeletError {
  const code = toCatalog[err.code] ?? 'Internal';
  return new KubeletError(code, `${method}: ${err.details || err.message}`, { cause: err });
}

/** Any thrown value as the gRPC status a server answers with. */
export function toGrpcError(err: unknown): GrpcCallError {
  if (err instanceof KubeletError) return new GrpcCallError(toGrpc[err.code], err.message);
  return new GrpcCallError(Code.UNKNOWN, err instanceof Error ? err.message : String(err));
}

/**
 * What the runtime said, as upstream reports it (the gRPC status message, without the method name
 * fromGrpcError puts in front); any other error's message.
 */
export function runtimeDetails(err: unknown): string {
  const cause = err instanceof KubeletError ? (err.cause as { details?: unknown } | undefined) : undefined;
  return typeof cause?.details === 'string' && cause.details
    ? cause.details
    : err instanceof Error
      ? err.message
      : String(err);
}

/**
 * A failed runtime call as grpc-go's status error prints it (`rpc error: code = NotFound desc = …`),
 * which upstream's events and statuses embed where they print the error whole ("Failed to pull
 * image …: rpc error: …"); any other error's message.
 */
export function goStatusText(err: unknown): string {
  const status = err instanceof GrpcCallError ? err : err instanceof KubeletError ? err.cause : undefined;
  const { code, details } = (status ?? {}) as { code?: unknown; details?: unknown };
  if (typeof code === 'number' && typeof details === 'string') return goStatusMessage(code, details);
  return messageOf(err);
}
