/**
 * The one error catalog. Every error that crosses a module boundary is a KubeletError with a code;
 * gRPC codes are translated in the CRI adapter and HTTP codes are derived once, in the server's
 * error handler, from `httpStatusOf` / `statusReasonOf`.
 */

/** What went wrong, independent of transport. */
export type ErrorCode =
  | 'NotFound'
  | 'BadRequest'
  | 'Invalid'
  | 'MethodNotAllowed'
  | 'NotImplemented'
  | 'Unavailable'
  | 'Unauthorized'
  | 'Forbidden'
  | 'Conflict'
  | 'AlreadyExists'
  | 'Timeout'
  | 'Cancelled'
  | 'TooManyRequests'
  | 'RequestEntityTooLarge'
  | 'Internal';

/** A coded error; `cause` keeps the original error for logs. */
export class KubeletError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'KubeletError';
  }
}

/** HTTP status for each code (as the Go kubelet / apiserver answer them). */
export const httpStatusOf: Record<ErrorCode, number> = {
  NotFound: 404,
  BadRequest: 400,
  Invalid: 422,
  MethodNotAllowed: 405,
  NotImplemented: 501,
  Unavailable: 503,
  Unauthorized: 401,
  Forbidden: 403,
  Conflict: 409,
  AlreadyExists: 409,
  Timeout: 504,
  // Nobody reads the answer: the client that asked has gone.
  Cancelled: 500,
  TooManyRequests: 429,
  RequestEntityTooLarge: 413,
  Internal: 500,
};

/** Kubernetes `Status.reason` for each code. */
export const statusReasonOf: Record<ErrorCode, string> = {
  NotFound: 'NotFound',
  BadRequest: 'BadRequest',
  Invalid: 'Invalid',
  MethodNotAllowed: 'MethodNotAllowed',
  NotImplemented: 'NotImplemented',
  Unavailable: 'ServiceUnavailable',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  Conflict: 'Conflict',
  AlreadyExists: 'AlreadyExists',
  Timeout: 'Timeout',
  Cancelled: 'InternalError',
  TooManyRequests: 'TooManyRequests',
  RequestEntityTooLarge: 'RequestEntityTooLarge',
  Internal: 'InternalError',
};

/** Shorthand constructors. */
export const notFound = (msg: string, cause?: unknown) => new KubeletError('NotFound', msg, { cause });
export const badRequest = (msg: string, cause?: unknown) => new KubeletError('BadRequest', msg, { cause });
export const invalid = (msg: string, cause?: unknown) => new KubeletError('Invalid', msg, { cause });
export const notImplemented = (msg: string) => new KubeletError('NotImplemented', msg);
export const unavailable = (msg: string, cause?: unknown) => new KubeletError('Unavailable', msg, { cause });

/** True when `err` is a KubeletError with the given code. */
export function isCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof KubeletError && err.code === code;
}

/** A printable message for any thrown value. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
