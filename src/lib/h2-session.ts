/**
 * One HTTP/2 connection to the apiserver that the kubelet's requests and watches share, as client-go multiplexes its
 * requests over one connection: a watch per ConfigMap and Secret the pods name (the Watch strategy) would otherwise
 * hold a TLS connection each, and a hundred pods starting at once a connection per request in flight. Its health is
 * checked as client-go's transport does (a PING after 30 s without a frame, the connection dropped when no answer
 * comes within 15 s); a connection that failed or went away is replaced by the next stream. A server that does not
 * offer HTTP/2 (ALPN) is remembered, and its streams are refused so the caller uses HTTP/1.1.
 */
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';

/** The TLS identity of the connection. */
export interface SessionTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  rejectUnauthorized?: boolean;
}

/** client-go's http2 ReadIdleTimeout and PingTimeout. */
export const HEALTH_CHECK = { readIdleMs: 30_000, pingTimeoutMs: 15_000 };

/** A stream's answer: its status, headers and the body to read. */
export interface StreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  stream: ClientHttp2Stream;
}

/** Thrown when the server does not speak HTTP/2: the caller uses HTTP/1.1. */
export class Http2Unsupported extends Error {
  constructor() {
    super('the apiserver does not speak HTTP/2');
  }
}

/** The shared connection. */
export class ApiserverSession {
  private session: ClientHttp2Session | undefined;
  private connected: Promise<ClientHttp2Session> | undefined;
  private unsupported = false;
  private closed = false;

  constructor(
    private readonly origin: string,
    private readonly tls: SessionTls,
    private readonly health = HEALTH_CHECK,
  ) {}

  /** Whether the server is known not to speak HTTP/2. */
  get http1Only(): boolean {
    return this.unsupported;
  }

  /**
   * Sends a request as a stream of the shared connection; resolves at its response headers. The deadline covers the
   * response headers, or with `wholeExchange` the body too (the stream is reset when it passes). Throws
   * Http2Unsupported when the server does not offer HTTP/2, another error when the connection or the stream fails;
   * `signal` cancels it at any time.
   */
  async request(
    method: string,
    path: string,
    headers: Record<string, string>,
    o: { body?: Buffer; signal?: AbortSignal; timeoutMs: number; wholeExchange?: boolean },
  ): Promise<StreamAnswer> {
    if (this.unsupported) throw new Http2Unsupported();
    const session = await this.connect();
    return new Promise((resolve, reject) => {
      // (a DELETE may carry a body, DeleteOptions: Node ends a DELETE's stream at once unless told)
      const stream = session.request({ ':method': method, ':path': path, ...headers }, { endStream: !o.body });
      const timer = setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new Error(`timed out after ${o.timeoutMs}ms`));
      }, o.timeoutMs);
      const onAbort = () => stream.close(http2.constants.NGHTTP2_CANCEL);
      o.signal?.addEventListener('abort', onAbort, { once: true });
      if (o.signal?.aborted) onAbort();
      stream.once('response', (answer) => {
        if (!o.wholeExchange) clearTimeout(timer);
        resolve({ status: Number(answer[':status'] ?? 0), headers: answer, stream });
      });
      // Kept for the stream's life: a reset after the response ends its body, it never throws unheard.
      stream.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      stream.once('close', () => {
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        reject(new Error(o.signal?.aborted ? 'aborted' : 'stream closed before its response'));
      });
      if (o.body) stream.end(o.body);
    });
  }

  /** Closes the connection; streams opened after this fail. */
  close(): void {
    this.closed = true;
    this.session?.destroy();
    this.session = undefined;
    this.connected = undefined;
  }

  private connect(): Promise<ClientHttp2Session> {
    if (this.closed) return Promise.reject(new Error('the apiserver client was closed'));
    if (this.connected) return this.connected;
    const session = http2.connect(this.origin, { ...this.tls, ALPNProtocols: ['h2'] });
    this.session = session;
    const forget = () => {
      if (this.session === session) {
        this.session = undefined;
        this.connected = undefined;
      }
    };
    session.on('close', forget);
    session.on('goaway', forget);
    this.connected = new Promise((resolve, reject) => {
      session.once('connect', () => {
        if (session.alpnProtocol !== 'h2') {
          this.unsupported = true;
          session.destroy();
          return reject(new Http2Unsupported());
        }
        watchHealth(session, this.health);
        resolve(session);
      });
      session.on('error', (err: NodeJS.ErrnoException) => {
        forget();
        // The server refused the protocol: HTTP/1.1 from now on.
        if (err.code === 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL') {
          this.unsupported = true;
          reject(new Http2Unsupported());
        } else reject(err);
      });
    });
    // A failed connection is retried by the next stream.
    this.connected.catch(() => forget());
    return this.connected;
  }
}

/** Pings a connection that was silent for `readIdleMs` and drops it when no answer comes in `pingTimeoutMs`. */
function watchHealth(session: ClientHttp2Session, health: typeof HEALTH_CHECK): void {
  session.setTimeout(health.readIdleMs, () => {
    if (session.destroyed || session.closed) return;
    const timer = setTimeout(
      () => session.destroy(new Error('HTTP/2 health check: no PING answer')),
      health.pingTimeoutMs,
    );
    timer.unref();
    try {
      session.ping((err) => {
        clearTimeout(timer);
        if (err) session.destroy(err);
      });
    } catch (err) {
      clearTimeout(timer);
      session.destroy(err as Error);
    }
  });
  // The connection alone never holds the process.
  session.unref();
}
