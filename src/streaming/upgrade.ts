/** HTTP/1.1 upgrade plumbing shared by remote command and port-forward (raw sockets, no framework). */
import { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { PooledReads } from './pooled-reads.js';
import { endThenDestroy } from './drain-then-destroy.js';

/** All values of a header, split on commas. */
export function headerValues(h: IncomingHttpHeaders[string]): string[] {
  return [h ?? []]
    .flat()
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

/** Picks the first client protocol we support (upstream negotiateProtocol: client order wins). */
export function negotiate(clientProtocols: readonly string[], serverProtocols: readonly string[]): string | undefined {
  for (const p of clientProtocols.flatMap((x) => x.split(',')).map((x) => x.trim()))
    if (serverProtocols.includes(p)) return p;
  return undefined;
}

/** Which upgrade a request asks for. */
export function upgradeKind(req: IncomingMessage): 'websocket' | 'spdy' | undefined {
  const u = String(req.headers.upgrade ?? '').toLowerCase();
  return u === 'websocket' ? 'websocket' : u.startsWith('spdy/3.1') ? 'spdy' : undefined;
}

/**
 * The SPDY/3.1 handshake (upstream httpstream.Handshake): negotiates `X-Stream-Protocol-Version`
 * and answers 101 with it; a missing header is 400, no common version 403 with
 * `X-Accepted-Stream-Protocol-Versions`. Returns the protocol, or undefined once it has refused.
 */
export function acceptSpdy(req: IncomingMessage, socket: Duplex, supported: readonly string[]): string | undefined {
  const offered = headerValues(req.headers['x-stream-protocol-version']);
  if (!offered.length) {
    rejectUpgrade(socket, 400, 'unable to upgrade: X-Stream-Protocol-Version is required');
    return undefined;
  }
  const protocol = negotiate(offered, supported);
  if (!protocol) {
    rejectUpgrade(
      socket,
      403,
      `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`,
      supported.map((p) => ['X-Accepted-Stream-Protocol-Versions', p]),
    );
    return undefined;
  }
  socket.write(spdyUpgradeResponse(protocol));
  return protocol;
}

/** The WebSocket subprotocol to use (`fallback` when the client offers none), or undefined once refused with 400. */
export function webSocketProtocol(
  req: IncomingMessage,
  socket: Duplex,
  supported: readonly string[],
  fallback: string,
): string | undefined {
  const offered = headerValues(req.headers['sec-websocket-protocol']);
  const protocol = offered.length ? negotiate(offered, supported) : fallback;
  if (!protocol)
    rejectUpgrade(
      socket,
      400,
      `requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${supported.join(' ')}]`,
    );
  return protocol;
}

/** The 101 response for a SPDY/3.1 upgrade with the negotiated protocol. */
export function spdyUpgradeResponse(protocol: string): string {
  return `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`;
}

/** Answers an upgrade with an error (plain text, as Go's http.Error) and closes the socket. */
export function rejectUpgrade(
  socket: Duplex,
  code: number,
  message: string,
  extraHeaders: [string, string][] = [],
): void {
  writeResponse(socket, code, `${message}\n`, [
    ['Content-Type', 'text/plain; charset=utf-8'],
    ['X-Content-Type-Options', 'nosniff'],
    ...extraHeaders,
  ]);
}

/** Writes a whole HTTP/1.1 response on a raw socket (before any upgrade) and closes it. */
export function writeResponse(socket: Duplex, code: number, body: string, headers: [string, string][]): void {
  const all = [...headers, ['Content-Length', String(Buffer.byteLength(body))], ['Connection', 'close']];
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Error'}\r\n${all.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`,
  );
}

/**
 * Relays an upgrade request to a connected `upstream` as `method path` (headers kept except Host
 * and Authorization, then `head`) and joins the two connections. pipe() ends each side when the
 * other ends, after everything read has been written (a 'close' can come while pipe still holds
 * data, so it must not end the other side); a reset tears both down, and a client that is gone
 * takes the upstream side with it. When `upstream` was connected with `reads`' onread option, its
 * bytes reach the client through those pooled buffers instead of pipe() (same ordering and end).
 */
export function relayUpgrade(
  req: IncomingMessage,
  head: Buffer,
  client: Duplex,
  upstream: Duplex,
  target: { path: string; host: string },
  reads?: PooledReads,
): void {
  const lines = [`${req.method ?? 'GET'} ${target.path} HTTP/1.1`, `Host: ${target.host}`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i].toLowerCase();
    if (k !== 'host' && k !== 'authorization') lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  }
  upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (head.length) upstream.write(head);
  client.pipe(upstream);
  if (reads) {
    reads.pipeTo(client, () => upstream.resume());
    upstream.on('end', () => client.end());
    upstream.resume();
  } else upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  // What was read before the runtime's side failed still reaches the client, then its end.
  upstream.on('error', () => endThenDestroy(client));
  client.on('close', () => upstream.destroy());
}
