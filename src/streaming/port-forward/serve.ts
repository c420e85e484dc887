/**
 * The entry point for port-forward upgrades:
 *   Upgrade: SPDY/3.1 + X-Stream-Protocol-Version: portforward.k8s.io  → SPDY streams
 *   Upgrade: websocket + SPDY/3.1+portforward.k8s.io                   → SPDY frames inside
 *                                                                         binary messages (tunnel)
 *   Upgrade: websocket + v4.channel.k8s.io / v4.base64.channel.k8s.io  → channels, ?port=
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { SpdyConnection } from '../spdy/connection.js';
import { headerValues, rejectUpgrade, spdyUpgradeResponse } from '../upgrade.js';
import { webSocketDuplex } from '../ws-duplex.js';
import { serveSpdyPortForward, type PortDialer } from './spdy.js';
import { serveWebSocketPortForward } from './websocket.js';

/** The SPDY subprotocol. */
export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
/** The WebSocket subprotocol of the SPDY tunnel. */
export const PORT_FORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
const wsProtocols = [PORT_FORWARD_TUNNEL_PROTOCOL, 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 16 << 20 });

/** Parses `?port=` (comma-separated or repeated) for WebSocket clients. */
export function portsFromQuery(q: URLSearchParams): number[] | { error: string } {
  const raw = q.getAll('port').flatMap((p) => p.split(',')).map((p) => p.trim()).filter(Boolean);
  const ports: number[] = [];
  for (const p of raw) {
    const n = Number(p);
    if (!/^\d+$/.test(p) || n < 1 || n > 65535) return { error: `unable to parse "${p}" as a port: must be an integer between 1 and 65535` };
    ports.push(n);
  }
  return ports;
}

/** Serves a port-forward upgrade; resolves when the session is over. */
export async function servePortForward(req: IncomingMessage, socket: Duplex, head: Buffer, o: { dial: PortDialer; describe: (port: number) => string; ports?: number[] }): Promise<void> {
  if (head.length) socket.unshift(head);
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
  if (upgrade === 'websocket') {
    const offered = headerValues(req.headers['sec-websocket-protocol']);
    const protocol = offered.length ? offered.find((p) => wsProtocols.includes(p)) : 'v4.channel.k8s.io';
    if (!protocol) return rejectUpgrade(socket, 400, `requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${wsProtocols.join(' ')}]`);
    let ports: number[] = [];
    if (protocol !== PORT_FORWARD_TUNNEL_PROTOCOL) {
      // The ports of the CRI request, else the query's.
      const p = o.ports?.length ? o.ports : portsFromQuery(new URL(req.url ?? '/', 'http://x').searchParams);
      if ('error' in p) return rejectUpgrade(socket, 400, p.error);
      if (!p.length) return rejectUpgrade(socket, 400, 'query parameter "port" is required');
      ports = p;
    }
    const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, Buffer.alloc(0), resolve));
    if (protocol === PORT_FORWARD_TUNNEL_PROTOCOL) {
      return serveSpdyPortForward(new SpdyConnection(webSocketDuplex(ws), { server: true }), { dial: o.dial, describe: o.describe });
    }
    return serveWebSocketPortForward(ws, { protocol, ports, dial: o.dial, describe: o.describe });
  }
  if (upgrade.startsWith('spdy/3.1')) {
    const offered = headerValues(req.headers['x-stream-protocol-version']);
    if (!offered.length) return rejectUpgrade(socket, 400, 'unable to upgrade: X-Stream-Protocol-Version is required');
    if (!offered.includes(PORT_FORWARD_PROTOCOL)) {
      return rejectUpgrade(socket, 403, `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${PORT_FORWARD_PROTOCOL}]`, [['X-Accepted-Stream-Protocol-Versions', PORT_FORWARD_PROTOCOL]]);
    }
    socket.write(spdyUpgradeResponse(PORT_FORWARD_PROTOCOL));
    return serveSpdyPortForward(new SpdyConnection(socket, { server: true }), { dial: o.dial, describe: o.describe });
  }
  return rejectUpgrade(socket, 400, 'Upgrade request required');
}
