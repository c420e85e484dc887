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
import { acceptSpdy, rejectUpgrade, upgradeKind, webSocketProtocol } from '../upgrade.js';
import { acceptWebSocket } from '../ws-accept.js';

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
