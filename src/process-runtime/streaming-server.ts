/**
 * The process runtime's streaming server (the role containerd's plays for CRI): CRI
 * Exec / Attach / PortForward register a request and get a URL
 * `http://127.0.0.1:<port>/{exec,attach,portforward}/<token>`; the kubelet proxies the client's
 * upgrade there. Tokens are single-use, expire after `tokenTtlMs` (1 min) and are bounded in
 * number (`maxInFlight`, 1000): beyond that, registering fails (ResourceExhausted).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { KubeletError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { rejectUpgrade } from '../streaming/upgrade.js';

/** What a token stands for; `serve` handles the upgrade (protocols live in src/streaming). */
export interface PendingStream {
  kind: 'exec' | 'attach' | 'portforward';
  serve(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
}

/** Options. */
export interface StreamingServerOptions {
  logger: Logger;
  address?: string;
  port?: number;
  tokenTtlMs?: number;
  maxInFlight?: number;
  /** Sessions idle this long are closed (streamingConnectionIdleTimeout; 0 = never). */ idleTimeoutMs?: number;
}

/** The server. `start` before `register`; `stop` closes it and every session. */
export class StreamingServer {
  private server: http.Server | undefined;
  private readonly pending = new Map<string, { stream: PendingStream; expires: number }>();
  private readonly sockets = new Set<Duplex>();
  private baseUrl = '';

  constructor(private readonly o: StreamingServerOptions) {}

  /** Listens (loopback, ephemeral port by default). */
  async start(): Promise<void> {
    const server = http.createServer((_req, res) => {
      res.writeHead(400, { 'Content-Type': 'text/plain' });
      res.end('Upgrade request required\n');
    });
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) =>
      this.onUpgrade(req, socket, head),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port ?? 0, this.o.address ?? '127.0.0.1', resolve);
    });
    const a = server.address() as AddressInfo;
    this.baseUrl = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
    this.server = server;
  }

  /** Registers a session and returns its single-use URL. */
  register(stream: PendingStream): string {
    if (!this.server) throw new KubeletError('Unavailable', 'streaming server is not running');
    // Token lifetimes are waits: monotonic, so a stepped wall clock neither expires nor prolongs them.
    const now = performance.now();
    for (const [t, p] of this.pending) if (p.expires <= now) this.pending.delete(t);
    if (this.pending.size >= (this.o.maxInFlight ?? 1000))
      throw new KubeletError('TooManyRequests', 'maximum number of in-flight streaming requests exceeded');
    const token = randomBytes(12).toString('base64url');
    this.pending.set(token, { stream, expires: now + (this.o.tokenTtlMs ?? 60_000) });
    return `${this.baseUrl}/${stream.kind}/${token}`;
  }

  /** Number of registered, not yet used tokens. */
  get inFlight(): number {
    return this.pending.size;
  }

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const m = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    const p = m ? this.pending.get(m[2]) : undefined;
    if (!m || !p || p.stream.kind !== m[1] || p.expires <= performance.now()) {
      if (m) this.pending.delete(m[2]);
      return rejectUpgrade(socket, 404, 'unknown or expired streaming token');
    }
    this.pending.delete(m[2]);
    this.sockets.add(socket);
    const idle = this.o.idleTimeoutMs ?? 4 * 3600_000;
    if (idle > 0 && 'setTimeout' in socket)
      (socket as Socket).setTimeout(idle, () => {
        this.o.logger.info({ kind: p.stream.kind }, 'closing an idle streaming connection');
        socket.destroy();
      });
    socket.once('close', () => this.sockets.delete(socket));
    p.stream.serve(req, socket, head).catch((err: Error) => {
      this.o.logger.warn({ err: err.message, kind: p.stream.kind }, 'streaming session failed');
      socket.destroy();
    });
  }

  /** Stops listening and ends every session. */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.pending.clear();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server = undefined;
  }
}
