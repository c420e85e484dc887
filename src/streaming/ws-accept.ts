/**
 * Completing a WebSocket upgrade (the `ws` library), apart from upgrade.ts so that relaying an upgrade does not load
 * it.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

const chosen = new WeakMap<IncomingMessage, string>();
const wss = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  maxPayload: 16 << 20,
  handleProtocols: (_offered, req) => chosen.get(req) ?? false,
});

/** Completes a WebSocket upgrade answering `protocol` (from webSocketProtocol). */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, protocol: string): Promise<WebSocket> {
  chosen.set(req, protocol);
  // The choice is made: `ws` would refuse an offer that is not an RFC 7230 token, as the SPDY
  // tunnel's `SPDY/3.1+portforward.k8s.io` is not (400 "Invalid Sec-WebSocket-Protocol header").
  if (req.headers['sec-websocket-protocol']) req.headers['sec-websocket-protocol'] = 'chosen';
  return new Promise((resolve) => wss.handleUpgrade(req, socket, Buffer.alloc(0), resolve));
}
