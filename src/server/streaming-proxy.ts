/**
 * exec / attach / port-forward on 10250, as upgrades (SPDY/3.1 or WebSocket, whatever the client
 * sent):
 *  1. the auth filter (401 / 403 / 500, plain text as for every request);
 *  2. path and query validation, pod and container lookup, CRI Exec / Attach / PortForward —
 *     errors answered before the upgrade as a Kubernetes Status;
 *  3. the connection is proxied raw to the runtime's streaming URL (request line rewritten,
 *     headers kept except Host and Authorization), bytes both ways.
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Socket } from 'node:net';
import { KubeletError, httpStatusOf, type ErrorCode } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { KubeletHost } from '../routes/host.js';
import type { StreamRequest } from '../streaming/stream-request.js';
import { streamOptionsFromQuery } from '../streaming/remote-command/protocol.js';
import { portsFromQuery } from '../streaming/port-forward/ports-query.js';
import { headerValues, rejectUpgrade, relayUpgrade, upgradeKind, writeResponse } from '../streaming/upgrade.js';
import { authFilter, type AuthFilterDeps } from './auth-filter.js';
import type { AuditRecord } from './audit.js';
import { statusBody } from './status-errors.js';
import { decodedPathSegments, invalidPathSegment } from '../routes/schemas.js';
import { pooledReads } from '../streaming/pooled-reads.js';

/** Parses an upgrade path into a request, or a Status error (pure). */
export function parseStreamPath(method: string, rawUrl: string): StreamRequest | { code: ErrorCode; message: string } {
  const url = new URL(rawUrl, 'http://x');
  // An undecodable segment becomes NUL, which no valid segment holds: the validation below refuses it.
  const parts = decodedPathSegments(url.pathname, () => '\0');
  const [kind, namespace, podName, ...rest] = parts;
  const bad = (message: string) => ({ code: 'BadRequest' as const, message });
  const notFound = {
    code: 'NotFound' as const,
    message: `the server could not find the requested resource (${method} ${url.pathname})`,
  };
  if (kind !== 'exec' && kind !== 'attach' && kind !== 'portForward') return notFound;
  if (kind === 'portForward' ? rest.length > 1 : rest.length < 1 || rest.length > 2) return notFound;
  const invalid = invalidPathSegment([
    ['podNamespace', namespace ?? ''],
    ['podID', podName ?? ''],
    ...rest.map((r): [string, string] => ['segment', r]),
  ]);
  if (invalid) return bad(invalid);
  if (kind === 'portForward') {
    const ports = portsFromQuery(url.searchParams);
    if ('error' in ports) return bad(ports.error);
    return { kind, namespace, podName, podUid: rest[0], ports };
  }
  const [podUid, containerName] = rest.length === 2 ? rest : [undefined, rest[0]];
  const flags = streamOptionsFromQuery(url.searchParams);
  if ('error' in flags) return bad(flags.error);
  if (kind === 'attach') return { kind, namespace, podName, podUid, containerName, flags };
  const command = url.searchParams.getAll('command');
  if (!command.length) return bad('command is required');
  return { kind, namespace, podName, podUid, containerName, command, flags };
}

/** A WebSocket upgrade that offers the v5 remote-command protocol. */
function offersWebSocketV5(req: IncomingMessage): boolean {
  return (
    upgradeKind(req) === 'websocket' &&
    headerValues(req.headers['sec-websocket-protocol']).includes('v5.channel.k8s.io')
  );
}

/** A WebSocket upgrade that offers port-forward's SPDY tunnel. */
function offersPortForwardTunnel(req: IncomingMessage): boolean {
  return (
    upgradeKind(req) === 'websocket' &&
    headerValues(req.headers['sec-websocket-protocol']).includes('SPDY/3.1+portforward.k8s.io')
  );
}

function sendStatus(socket: Socket, code: ErrorCode, message: string): void {
  writeResponse(socket, httpStatusOf[code], JSON.stringify(statusBody(code, message)), [
    ['Content-Type', 'application/json'],
  ]);
}

/** Handles one upgrade request on the secure port. Never throws. */
export async function handleStreamingUpgrade(
  d: { filter: AuthFilterDeps; host: KubeletHost; enabled: boolean; log: Logger; audit?: (r: AuditRecord) => void },
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
): Promise<void> {
  socket.on('error', () => undefined);
  const method = req.method ?? 'GET';
  const r = await authFilter(d.filter, { method, url: req.url ?? '/', headers: req.headers, socket });
  if (!r.ok) return rejectUpgrade(socket, r.code, r.body.replace(/\n$/, ''));
  const parsed = parseStreamPath(method, req.url ?? '/');
  if ('code' in parsed) return sendStatus(socket, parsed.code, parsed.message);
  if (!d.enabled) return rejectUpgrade(socket, 405, 'Debug endpoints are disabled.');
  if (upgradeKind(req) === 'websocket')
    d.host.observeWebSocketStreaming?.(parsed.kind === 'portForward' ? 'portforward' : parsed.kind);
  d.audit?.({
    verb: parsed.kind === 'portForward' ? 'portforward' : parsed.kind,
    user: r.user,
    namespace: parsed.namespace,
    pod: parsed.podName,
    remote: socket.remoteAddress,
    ...(parsed.kind === 'portForward'
      ? { ports: parsed.ports }
      : { container: parsed.containerName, command: parsed.kind === 'exec' ? parsed.command : undefined }),
  });
  let target: URL;
  try {
    target = new URL(await d.host.getStreamUrl(parsed));
  } catch (err) {
    if (err instanceof KubeletError) return sendStatus(socket, err.code, err.message);
    d.log.error({ err: String(err) }, 'streaming request failed');
    return sendStatus(socket, 'Internal', String((err as Error)?.message ?? err));
  }
  // As the query goes along below: the client's when the runtime's URL has none.
  const search = target.search || (req.url?.includes('?') ? req.url.slice(req.url.indexOf('?')) : '');
  if (parsed.kind !== 'portForward' && !d.host.runtimeServesWebSocketV5 && offersWebSocketV5(req)) {
    // A runtime whose streaming server stops at WebSocket v4 cannot close stdin: the kubelet ends
    // the WebSocket itself and speaks SPDY to the runtime (ExtendWebSocketsToKubelet).
    const upstreamUrl = new URL(target);
    upstreamUrl.search = search;
    const [{ serveRemoteCommand }, { spdyClientRunner }] = await Promise.all([
      import('../streaming/remote-command/serve.js'),
      import('../streaming/remote-command/spdy-client.js'),
    ]);
    return serveRemoteCommand(req, socket, head, {
      opts: parsed.flags,
      command: parsed.kind === 'exec' ? parsed.command : [],
      run: spdyClientRunner(upstreamUrl, method, parsed.flags),
    }).catch((err: unknown) => {
      d.log.info({ err: String(err) }, 'translated streaming session failed');
      socket.destroy();
    });
  }
  if (parsed.kind === 'portForward' && !d.host.runtimeServesWebSocketV5 && offersPortForwardTunnel(req)) {
    // containerd's streaming server has no SPDY tunnel over WebSocket: the kubelet ends the
    // WebSocket and carries its bytes to the runtime over a SPDY upgrade of its own.
    const upstreamUrl = new URL(target);
    upstreamUrl.search = search;
    const { relayTunnelToSpdy } = await import('../streaming/port-forward/tunnel-to-spdy.js');
    return relayTunnelToSpdy(req, socket, head, upstreamUrl, method).catch((err: unknown) => {
      d.log.info({ err: String(err) }, 'translated port-forward session failed');
      socket.destroy();
    });
  }
  const reads = pooledReads();
  // No Nagle (Go's connections never have it): a small frame written behind another would wait for a delayed ACK.
  const upstream = net.connect({
    port: Number(target.port),
    host: target.hostname,
    onread: reads.onread,
    noDelay: true,
  });
  upstream.on('error', (err) => {
    if (!socket.destroyed)
      sendStatus(socket, 'Internal', `error dialing the runtime's streaming server: ${err.message}`);
  });
  upstream.once('connect', () => {
    upstream.removeAllListeners('error');
    // As upstream's upgrade-aware proxy: the client's query goes along when the runtime's URL has none.
    relayUpgrade(req, head, socket, upstream, { path: `${target.pathname}${search}`, host: target.host }, reads);
  });
}
