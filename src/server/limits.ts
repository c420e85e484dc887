/** Per-port limits (also while shutting down): connections, time to send the headers, idle keep-alive. */
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

export const SERVER_LIMITS = { maxConnections: 2048, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 60_000 };

/** Applies {@link SERVER_LIMITS} to a listening server of any port. */
export function applyConnectionLimits(server: Server): void {
  server.maxConnections = SERVER_LIMITS.maxConnections;
  server.headersTimeout = SERVER_LIMITS.headersTimeoutMs;
  server.keepAliveTimeout = SERVER_LIMITS.keepAliveTimeoutMs;
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
