/**
 * The entry point for exec/attach upgrades: validates the query, answers errors before the
 * upgrade (400 / 403 as upstream), then hands the connection to the SPDY or WebSocket session.
 *
 *   Upgrade: SPDY/3.1   + X-Stream-Protocol-Version   → 101 → serveSpdyRemoteCommand
 *   Upgrade: websocket  + Sec-WebSocket-Protocol       → 101 → serveWebSocketRemoteCommand
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { spdyRemoteCommandProtocols, wsRemoteCommandProtocols, type StreamOptions } from './protocol.js';
import type { RemoteCommandRunner } from './session.js';
import { serveSpdyRemoteCommand } from './spdy.js';
import { serveWebSocketRemoteCommand } from './websocket.js';
import { acceptSpdy, acceptWebSocket, rejectUpgrade, upgradeKind, webSocketProtocol } from '../upgrade.js';

/** Parses exec/attach query flags as upstream (only "1" is true; a TTY drops stderr). */
export function streamOptionsFromQuery(q: URLSearchParams): StreamOptions | { error: string } {
  const on = (k: string) => q.get(k) === '1';
  const tty = on('tty');
  const o = { stdin: on('input'), stdout: on('output'), stderr: on('error') && !tty, tty };
  if (!o.stdin && !o.stdout && !o.stderr) return { error: 'you must specify at least 1 of stdin, stdout, stderr' };
  return o;
}

/** Serves an exec/attach upgrade on `socket`; resolves when the session is over. */
export async function serveRemoteCommand(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  o: { opts: StreamOptions; command: readonly string[]; run: RemoteCommandRunner; streamTimeoutMs?: number },
): Promise<void> {
  if (head.length) socket.unshift(head);
  const kind = upgradeKind(req);
  if (kind === 'websocket') {
    const protocol = webSocketProtocol(req, socket, wsRemoteCommandProtocols, 'channel.k8s.io');
    if (!protocol) return;
    return serveWebSocketRemoteCommand(await acceptWebSocket(req, socket, protocol), { protocol, ...o });
  }
  if (kind === 'spdy') {
    const protocol = acceptSpdy(req, socket, spdyRemoteCommandProtocols);
    if (!protocol) return;
    return serveSpdyRemoteCommand(socket, { protocol, ...o });
  }
  return rejectUpgrade(socket, 400, 'Upgrade request required');
}
