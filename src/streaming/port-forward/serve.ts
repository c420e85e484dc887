/**
 * The entry point for port-forward upgrades:
 *   Upgrade: SPDY/3.1 + X-Stream-Protocol-Version: portforward.k8s.io  → SPDY streams
 *   Upgrade: websocket + SPDY/3.1+portforward.k8s.io                   → SPDY frames inside
 *                                                                         binary messages (tunnel)
 *   Upgrade: websocket + v4.channel.k8s.io / v4.base64.channel.k8s.io  → channels, ?port=
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { SpdyConnection } from '../spdy/connection.js';
import { acceptSpdy, rejectUpgrade, upgradeKind, webSocketProtocol } from '../upgrade.js';
import { acceptWebSocket } from '../ws-accept.js';
import { portsFromQuery } from './ports-query.js';
import { webSocketDuplex } from '../ws-duplex.js';
import { serveSpdyPortForward, type PortDialer } from './spdy.js';
import { serveWebSocketPortForward } from './websocket.js';

/** The SPDY subprotocol. */
export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
/** The WebSocket subprotocol of the SPDY tunnel. */
export const PORT_FORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
const wsProtocols = [PORT_FORWARD_TUNNEL_PROTOCOL, 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

/** Serves a port-forward upgrade; resolves when the session is over. */
export async function servePortForward(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  o: { dial: PortDialer; describe: (port: number) => string; ports?: number[] },
): Promise<void> {
  if (head.length) socket.unshift(head);
  const forward = { dial: o.dial, describe: o.describe };
  const kind = upgradeKind(req);
  if (kind === 'websocket') {
    const protocol = webSocketProtocol(req, socket, wsProtocols, 'v4.channel.k8s.io');
    if (!protocol) return;
    if (protocol === PORT_FORWARD_TUNNEL_PROTOCOL) {
      return serveSpdyPortForward(
        new SpdyConnection(webSocketDuplex(await acceptWebSocket(req, socket, protocol)), { server: true }),
        forward,
      );
    }
    // The ports of the CRI request, else the query's.
    const ports = o.ports?.length ? o.ports : portsFromQuery(new URL(req.url ?? '/', 'http://x').searchParams);
    if ('error' in ports) return rejectUpgrade(socket, 400, ports.error);
    if (!ports.length) return rejectUpgrade(socket, 400, 'query parameter "port" is required');
    return serveWebSocketPortForward(await acceptWebSocket(req, socket, protocol), { protocol, ports, ...forward });
  }
  if (kind === 'spdy') {
    if (!acceptSpdy(req, socket, [PORT_FORWARD_PROTOCOL])) return;
    return serveSpdyPortForward(new SpdyConnection(socket, { server: true }), forward);
  }
  return rejectUpgrade(socket, 400, 'Upgrade request required');
}
