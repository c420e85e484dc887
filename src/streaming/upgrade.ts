/** HTTP/1.1 upgrade plumbing shared by remote command and port-forward (raw sockets, no framework). */
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';

/** All values of a header, split on commas. */
export function headerValues(h: IncomingHttpHeaders[string]): string[] {
  return [h ?? []].flat().flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean);
}

/** The 101 response for a SPDY/3.1 upgrade with the negotiated protocol. */
export function spdyUpgradeResponse(protocol: string): string {
  return `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`;
}

/** Answers an upgrade with an error (plain text, as Go's http.Error) and closes the socket. */
export function rejectUpgrade(socket: Duplex, code: number, message: string, extraHeaders: [string, string][] = []): void {
  const reason = ({ 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 500: 'Internal Server Error' } as Record<number, string>)[code] ?? 'Error';
  const body = `${message}\n`;
  const headers = [['Content-Type', 'text/plain; charset=utf-8'], ['X-Content-Type-Options', 'nosniff'], ...extraHeaders, ['Content-Length', String(Buffer.byteLength(body))], ['Connection', 'close']];
  socket.end(`HTTP/1.1 ${code} ${reason}\r\n${headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`);
}
