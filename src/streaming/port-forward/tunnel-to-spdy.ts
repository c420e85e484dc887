/**
 * A port-forward over WebSocket-tunnelled SPDY (`SPDY/3.1+portforward.k8s.io`: kubectl and the
 * apiserver since PortForwardWebsockets / ExtendWebSocketsToKubelet) for a runtime whose
 * streaming server speaks SPDY only (containerd 1.6 and 1.7). The tunnel's binary messages are
 * the SPDY connection's bytes, so the kubelet upgrades a connection to the runtime to SPDY
 * (`portforward.k8s.io`) and relays the bytes both ways, as upstream's kubelet translates. A
 * runtime that refuses is answered with its reason before the WebSocket is accepted.
 */
import net from 'node:net';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { upgradeToSpdy } from '../spdy/client-upgrade.js';
import { acceptWebSocket } from '../ws-accept.js';
import { webSocketDuplex } from '../ws-duplex.js';
import { rejectUpgrade } from '../upgrade.js';
import { PORT_FORWARD_PROTOCOL, PORT_FORWARD_TUNNEL_PROTOCOL } from './serve.js';

/** Relays the client's tunnel to the runtime's SPDY server at `target`; resolves when either side is done. */
export async function relayTunnelToSpdy(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: URL,
  method: string,
): Promise<void> {
  const upstream = net.connect({ port: Number(target.port), host: target.hostname, noDelay: true });
  upstream.on('error', () => undefined);
  socket.once('close', () => upstream.destroy());
  let early: Buffer;
  try {
    await once(upstream, 'connect');
    early = await upgradeToSpdy(upstream, method, target, PORT_FORWARD_PROTOCOL);
  } catch (err) {
    upstream.destroy();
    return rejectUpgrade(socket, 500, `error dialing the runtime's streaming server: ${(err as Error).message}`);
  }
  if (head.length) socket.unshift(head);
  const client = webSocketDuplex(await acceptWebSocket(req, socket, PORT_FORWARD_TUNNEL_PROTOCOL));
  if (early.length) client.write(early);
  upstream.resume();
  // Either side ending ends both: the SPDY connection is one.
  await Promise.allSettled([pipeline(client, upstream), pipeline(upstream, client)]);
  client.destroy();
  upstream.destroy();
}
