/**
 * The entry point for exec/attach upgrades: validates the query, answers errors before the
 * upgrade (400 / 403 as upstream), then hands the connection to the SPDY or WebSocket session.
 *
 *   Upgrade: SPDY/3.1   + X-Stream-Protocol-Version   → 101 → serveSpdyRemoteCommand
 *   Upgrade: websocket  + Sec-WebSocket-Protocol       → 101 → serveWebSocketRemoteCommand
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { negotiate, spdyRemoteCommandProtocols, wsRemoteCommandProtocols, type StreamOptions } from './protocol.js';
import type { RemoteCommandRunner } from './session.js';
import { serveSpdyRemoteCommand } from './spdy.js';
import { serveWebSocketRemoteCommand } from './websocket.js';
import { headerValues, rejectUpgrade, spdyUpgradeResponse } from '../upgrade.js';

/** Parses exec/attach query flags as upstream (only "1" is true; a TTY drops stderr). */
export function streamOptionsFromQuery(q: URLSearchParams): StreamOptions | { error: string } {
  const on = (k: string) => q.get(k) === '1';
  const tty = on('tty');
  const o = { stdin: on('input'), stdout: on('output'), stderr: on('error') && !tty, tty };
  if (!o.stdin && !o.stdout && !o.stderr) return { error: 'you must specify at least 1 of stdin, stdout, stderr' };
  return o;
}

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 16 << 20 });

/** Serves an exec/attach upgrade on `socket`; resolves when the session is over. */
export async function serveRemoteCommand(req: IncomingMessage, socket: Duplex, head: Buffer, o: { opts: StreamOptions; command: readonly string[]; run: RemoteCommandRunner; streamTimeoutMs?: number }): Promise<void> {
  if (head.length) socket.unshift(head);
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
  if (upgrade === 'websocket') {
    const offered = headerValues(req.headers['sec-websocket-protocol']);
    const protocol = offered.length ? negotiate(offered, wsRemoteCommandProtocols) : 'channel.k8s.io';
    if (!protocol) return rejectUpgrade(socket, 400, `requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${wsRemoteCommandProtocols.join(' ')}]`);
    const ws = await new Promise<import('ws').WebSocket>((resolve) => wss.handleUpgrade(req, socket, Buffer.alloc(0), resolve));
    return serveWebSocketRemoteCommand(ws, { protocol, ...o });
  }
  if (upgrade.startsWith('spdy/3.1')) {
    const offered = headerValues(req.headers['x-stream-protocol-version']);
    if (!offered.length) return rejectUpgrade(socket, 400, 'unable to upgrade: X-Stream-Protocol-Version is required');
    const protocol = negotiate(offered, spdyRemoteCommandProtocols);
    if (!protocol) {
      return rejectUpgrade(socket, 403, `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${spdyRemoteCommandProtocols.join(' ')}]`,
        spdyRemoteCommandProtocols.map((p) => ['X-Accepted-Stream-Protocol-Versions', p]));
    }
    socket.write(spdyUpgradeResponse(protocol));
    return serveSpdyRemoteCommand(socket, { protocol, ...o });
  }
  return rejectUpgrade(socket, 400, 'Upgrade request required');
}
