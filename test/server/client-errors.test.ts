/**
 * Requests the HTTP parser refuses before any route: the raw answer (a Status with the right code)
 * and, through a real server, the connection closed afterwards.
 */
import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import { connect } from 'node:net';
import { clientErrorResponse } from '../../src/server/status-errors.js';
import { answerAndClose } from '../../src/server/limits.js';

function parse(response: string): { status: string; headers: string; body: Record<string, unknown> } {
  const [head, body] = response.split('\r\n\r\n');
  const [status, ...headers] = head.split('\r\n');
  return { status, headers: headers.join('\n'), body: JSON.parse(body) as Record<string, unknown> };
}

describe('clientErrorResponse', () => {
  it.each([
    ['HPE_HEADER_OVERFLOW', 'HTTP/1.1 431 Request Header Fields Too Large', 431, undefined],
    ['ERR_HTTP_REQUEST_TIMEOUT', 'HTTP/1.1 408 Request Timeout', 408, 'Timeout'],
    ['HPE_INVALID_METHOD', 'HTTP/1.1 400 Bad Request', 400, 'BadRequest'],
  ])('%s → %s', (code, statusLine, httpCode, reason) => {
    const answer = parse(clientErrorResponse(code));
    expect(answer.status).toBe(statusLine);
    expect(answer.headers).toContain('Connection: close');
    expect(answer.body).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: httpCode });
    expect(answer.body.reason).toBe(reason);
    const length = /Content-Length: (\d+)/.exec(answer.headers)?.[1];
    expect(Number(length)).toBe(Buffer.byteLength(JSON.stringify(answer.body)));
  });
});

describe('answerAndClose', () => {
  let server: http.Server | undefined;
  afterEach(() => server?.close());

  it('a client that reads the answer gets it whole, then the end of the connection', async () => {
    server = http.createServer(() => {});
    server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
      answerAndClose(socket, clientErrorResponse(err.code!)),
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const received = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.write('NOT HTTP\r\n\r\n');
    });
    expect(parse(received).body).toMatchObject({ code: 400, reason: 'BadRequest' });
  });
});
