/**
 * Per-port limits (also while shutting down): connections, time to send the headers, idle keep-alive, pipelined
 * requests; how a refused connection is answered and closed; how the servers are closed.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export const SERVER_LIMITS = {
  maxConnections: 2048,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 60_000,
  // Node's server answers pipelined requests in parallel and buffers each answer until the ones before it are read;
  // Go's answers one at a time. A client that pipelines more than this without reading is dropped.
  maxPipelinedRequests: 16,
};

/** Applies {@link SERVER_LIMITS} to a listening server of any port. */
export function applyConnectionLimits(server: Server): void {
  server.maxConnections = SERVER_LIMITS.maxConnections;
  server.headersTimeout = SERVER_LIMITS.headersTimeoutMs;
  server.keepAliveTimeout = SERVER_LIMITS.keepAliveTimeoutMs;
  boundPipelining(server, SERVER_LIMITS.maxPipelinedRequests);
}

/**
 * Drops a connection with more than `limit` requests unanswered, before the server's handlers see the request over
 * the limit: without it one client that writes thousands of pipelined `GET /pods` and reads nothing made the kubelet
 * build and hold thousands of answers (hundreds of MB). The handlers given to the server when it was created are
 * called through this gate.
 */
function boundPipelining(server: Server, limit: number): void {
  const handlers = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
  server.removeAllListeners('request');
  const unanswered = new WeakMap<Socket, number>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const count = (unanswered.get(socket) ?? 0) + 1;
    if (count > limit || socket.destroyed) return void socket.destroy();
    unanswered.set(socket, count);
    response.once('close', () => unanswered.set(socket, (unanswered.get(socket) ?? 1) - 1));
    for (const handler of handlers) handler.call(server, request, response);
  });
}

/** How long a refused connection's answer may take to leave before the connection is dropped anyway. */
const REFUSAL_FLUSH_MS = 5_000;

/**
 * Answers a connection the server refuses (a malformed request, headers too large or too slow, plain HTTP on the TLS
 * port) and closes it fully, as Go's server does. A half-close is not enough: the servers allow half-open sockets, so a
 * client that never reads would never send its own FIN and would keep the kubelet's descriptor for good.
 */
export function answerAndClose(socket: Duplex, response: string): void {
  socket.end(response, () => socket.destroy());
  setTimeout(() => socket.destroy(), REFUSAL_FLUSH_MS).unref();
}

/** A server that can be closed within a deadline (a Fastify instance, or a plain one wrapped). */
export interface ClosableServer {
  server: { closeAllConnections(): void };
  close(): PromiseLike<unknown>;
}

/** Closes `servers`: requests in flight get `graceMs`, then the remaining connections are destroyed. */
export async function closeServers(servers: readonly ClosableServer[], graceMs: number): Promise<void> {
  const timer = setTimeout(() => {
    for (const s of servers) s.server.closeAllConnections();
  }, graceMs);
  try {
    await Promise.all(servers.map((s) => s.close()));
  } finally {
    clearTimeout(timer);
  }
}
