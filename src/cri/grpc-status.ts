/**
 * gRPC status codes, the error a failed call rejects with, and a unary method's description: shared by every gRPC peer
 * of the kubelet.
 */

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

/** grpc-go's names of the codes (codes.Code's String), in code order. */
const GO_CODE_NAMES = [
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

/** A gRPC code as grpc-go prints it (DEADLINE_EXCEEDED → DeadlineExceeded), for upstream's messages. */
export function goCodeString(code: number): string {
  return GO_CODE_NAMES[code] ?? `Code(${code})`;
}

/** A gRPC status as grpc-go's status error prints it, which upstream's messages embed. */
export function goStatusMessage(code: number, details: string): string {
  return `rpc error: code = ${goCodeString(code)} desc = ${details}`;
}

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

/** A unary method: its path ("/pkg.Service/Method") and its message codecs. */
export interface UnaryMethod {
  path: string;
  requestSerialize(req: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
}
