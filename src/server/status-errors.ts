/** The one mapping from errors to HTTP: a Kubernetes Status body with the right code. */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { Status } from '../api/types.js';
import { hidden } from '../routes/schemas.js';
import { answerAndClose } from './limits.js';
import { KubeletError, httpStatusOf, statusReasonOf, type ErrorCode } from '../lib/errors.js';

/** A Failure Status body. */
export function statusBody(code: ErrorCode, message: string): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: statusReasonOf[code],
    code: httpStatusOf[code],
  };
}

/** Sends a Failure Status. */
export function sendStatus(reply: FastifyReply, code: ErrorCode, message: string): FastifyReply {
  return reply.code(httpStatusOf[code]).type('application/json').send(statusBody(code, message));
}

/** Go's http.Error / writePlainText: `message` and a newline as plain text, not sniffed. */
export function sendPlainText(reply: FastifyReply, code: number, message: string): FastifyReply {
  return reply
    .code(code)
    .type('text/plain; charset=utf-8')
    .header('X-Content-Type-Options', 'nosniff')
    .send(`${message}\n`);
}

/**
 * The raw answer to a request the HTTP parser refused before any route saw it (Fastify's
 * clientErrorHandler): 431 for headers over the limit, 408 for headers that took longer than the
 * server's limit, else 400, with a Status body as every other error; then the connection is
 * closed. A client that has gone gets nothing.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: import('node:net').Socket): void {
  if (!socket.writable) return void socket.destroy();
  answerAndClose(socket, clientErrorResponse(err.code ?? err.message));
}

/** The HTTP response to a request the parser refused with `code` (Node's error code). */
export function clientErrorResponse(code: string): string {
  const [httpCode, statusText, body]: [number, string, Omit<Status, 'code'>] =
    code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', failure('Request Header Fields Too Large')]
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', failure('Request Timeout', statusReasonOf.Timeout)]
        : [400, 'Bad Request', failure(`Bad Request: ${code}`, statusReasonOf.BadRequest)];
  const json = JSON.stringify({ ...body, code: httpCode });
  return (
    `HTTP/1.1 ${httpCode} ${statusText}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`
  );
}

function failure(message: string, reason?: string): Omit<Status, 'code'> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, ...(reason ? { reason } : {}) };
}

/** Installs the error and not-found handlers on an app. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | KubeletError, req, reply) => {
    if (err instanceof KubeletError) return sendStatus(reply, err.code, err.message);
    if ((err as FastifyError).validation) return sendStatus(reply, 'BadRequest', err.message);
    const sc = (err as FastifyError).statusCode;
    if (sc && sc >= 400 && sc < 500)
      return sendStatus(
        reply,
        sc === 404 ? 'NotFound' : sc === 405 ? 'MethodNotAllowed' : sc === 413 ? 'RequestEntityTooLarge' : 'BadRequest',
        err.message,
      );
    req.log.error({ err: err.message }, 'request failed');
    return sendStatus(reply, 'Internal', err.message);
  });
  app.setNotFoundHandler((req, reply) =>
    sendStatus(
      reply,
      'NotFound',
      `the server could not find the requested resource (${req.method} ${req.url.split('?')[0]})`,
    ),
  );
}

/** Answers 405 with an Allow header for every method of `path` not in `allowed`. */
export function methodNotAllowed(app: FastifyInstance, path: string, allowed: string[]): void {
  const others = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter(
    (m) => !allowed.includes(m) && !(m === 'HEAD' && allowed.includes('GET')),
  );
  app.route({
    method: others as never,
    url: path,
    schema: hidden,
    handler: (req, reply) =>
      sendStatus(
        reply.header('Allow', allowed.join(', ')),
        'MethodNotAllowed',
        `method ${req.method} is not allowed on ${path}`,
      ),
  });
}
