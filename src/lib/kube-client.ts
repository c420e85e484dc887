/**
 * The kubelet's apiserver client: the kubeconfig (kubeconfig.ts: client certificate/key, bearer
 * token or token file, CA) supplies TLS material and the Authorization header per request;
 * requests and watch streams go over one keep-alive HTTPS agent of ours (through a CONNECT tunnel
 * when a proxy applies: http-proxy.ts). Every call has a
 * deadline; credentials never appear in errors. Imported lazily, so a standalone kubelet does
 * not pay for it at start.
 */
import http from 'node:http';
import https from 'node:https';
import { loadKubeconfig } from './kubeconfig.js';
import { sleep } from './clock.js';
import { TokenBucket } from './token-bucket.js';
import { proxyFor, TunnelingAgent } from './http-proxy.js';
import { ApiserverSession, Http2Unsupported } from './h2-session.js';
import { messageOf } from './errors.js';
import type { Readable } from 'node:stream';

/** An answer: HTTP status and the decoded JSON body (undefined when not JSON). */
export interface ApiResponse<T> {
  status: number;
  body: T | undefined;
}

/** One request. `query` values that are undefined are left out. */
export interface KubeRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Default application/json; patches name their type (merge-patch, strategic-merge-patch). */
  contentType?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A watch event as the apiserver streams it. */
export interface WatchEvent<T = Record<string, unknown>> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/** The POST-only view the auth webhooks need. */
export interface ApiClient {
  post<T>(path: string, body: unknown, opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ApiResponse<T>>;
}

/** Talks to one apiserver. `request` rejects only on network errors, timeouts and aborts. */
export interface KubeClient extends ApiClient {
  readonly server: string;
  /** Re-reads the kubeconfig and its files (a rotated client certificate) and reconnects. */
  reload(): Promise<void>;
  request<T>(req: KubeRequest): Promise<ApiResponse<T>>;
  /**
   * Streams a watch: resolves when the server ends the stream, rejects with a WatchHttpError when
   * the answer is not 200, or with an Error on network failure / abort. `onEvent` is called per line.
   */
  watch<T>(req: Omit<KubeRequest, 'method' | 'body' | 'timeoutMs'>, onEvent: (e: WatchEvent<T>) => void): Promise<void>;
  /**
   * The same client without the kubeAPIQPS limit: upstream gives the node status and Lease
   * heartbeats, and the events (which have their own eventRecordQPS), clients of their own, so a
   * burst of pod updates never delays a heartbeat.
   */
  unthrottled(): KubeClient;
}

/** A non-200 answer to a watch (410 Gone included). */
export class WatchHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Connection {
  url: URL;
  /**
   * The agent, the HTTP/2 connection requests and watches share (HTTPS without a proxy) and the credentials for the
   * next request (an exec plugin may run first); `rejected()` after a 401.
   */
  prepare(): Promise<{
    agent: http.Agent;
    session?: ApiserverSession;
    headers: Record<string, string>;
    rejected(): void;
  }>;
  destroy(): void;
}

/**
 * The idle connections kept for requests, as client-go's transport keeps them (MaxIdleConnsPerHost 25, IdleConnTimeout
 * 90 s): a burst of requests (a hundred pods starting at once) does not leave a hundred connections open for good.
 */
const IDLE_CONNECTIONS = { keepAlive: true, maxFreeSockets: 25, timeout: 90_000 };

function connect(kubeconfigPath: string): Connection {
  const kc = loadKubeconfig(kubeconfigPath);
  const url = kc.server;
  const proxy = proxyFor(url, kc.proxyUrl, process.env);
  // The client's TLS identity, for the HTTP/1.1 agent and the HTTP/2 connection alike.
  const tlsFor = (cert: Buffer | undefined, key: Buffer | undefined) => ({
    ca: kc.tls.ca,
    cert,
    key,
    rejectUnauthorized: kc.tls.rejectUnauthorized,
    servername: kc.tls.servername,
  });
  const agentFor = (cert: Buffer | undefined, key: Buffer | undefined) => {
    if (url.protocol !== 'https:') return new http.Agent(IDLE_CONNECTIONS);
    const options = { ...IDLE_CONNECTIONS, ...tlsFor(cert, key) };
    return proxy ? new TunnelingAgent(proxy, options) : new https.Agent(options);
  };
  // Requests and watches share one HTTP/2 connection; through a proxy they go as HTTP/1.1 requests.
  const sessionFor = (cert: Buffer | undefined, key: Buffer | undefined) =>
    url.protocol === 'https:' && !proxy ? new ApiserverSession(url.origin, tlsFor(cert, key)) : undefined;
  let agent = agentFor(kc.tls.cert, kc.tls.key);
  let session = sessionFor(kc.tls.cert, kc.tls.key);
  let agentCert = kc.tls.cert;
  const exec = kc.exec;
  return {
    url,
    async prepare() {
      const bearer = (v: string | undefined): Record<string, string> => (v ? { Authorization: v } : {});
      const auth = kc.authorization();
      if (!exec) return { agent, session, headers: bearer(auth), rejected: () => {} };
      const cred = await exec.get();
      if (cred.cert && !(agentCert && cred.cert.equals(agentCert))) {
        // A new client certificate: connections made with the old one are closed, as client-go's.
        const old = { agent, session };
        agent = agentFor(cred.cert, cred.key);
        session = sessionFor(cred.cert, cred.key);
        agentCert = cred.cert;
        old.agent.destroy();
        old.session?.close();
      }
      return {
        agent,
        session,
        headers: bearer(cred.token && `Bearer ${cred.token}`),
        rejected: () => exec.invalidate(cred),
      };
    },
    destroy: () => {
      agent.destroy();
      session?.close();
    },
  };
}

/** An answer: its status, Retry-After, the body to read, and `done` once read. */
interface Answer {
  status: number;
  retryAfter?: string;
  body: Readable;
  done(): void;
}

function fullPath(conn: Connection, req: KubeRequest): string {
  const prefix = conn.url.pathname.replace(/\/+$/, '');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) q.set(k, String(v));
  const qs = q.toString();
  return `${prefix}${req.path}${qs ? `?${qs}` : ''}`;
}

/** Loads `kubeconfigPath` and returns a client; `timeoutMs` is the default deadline per call. */
export async function createKubeClient(
  kubeconfigPath: string,
  defaults: { timeoutMs: number; userAgent?: string; qps?: number; burst?: number },
): Promise<KubeClient> {
  let conn = connect(kubeconfigPath);
  // kubeAPIQPS / kubeAPIBurst: every request waits for its turn, as client-go's rate limiter.
  const limiter = defaults.qps ? new TokenBucket(defaults.qps, defaults.burst ?? 0) : undefined;
  const mod = conn.url.protocol === 'https:' ? https : http;
  const userAgent = defaults.userAgent ?? 'tskubelet';

  /**
   * Sends `req`, as a stream of the shared HTTP/2 connection when the server speaks HTTP/2 (else as an HTTP/1.1
   * request); the deadline covers the whole exchange, or only the response headers when `headersOnly`.
   */
  const open = async (
    req: KubeRequest,
    timeoutMs: number,
    o: { headersOnly?: boolean; limited?: boolean } = {},
  ): Promise<Answer> => {
    const turn = (o.limited ?? true) ? limiter?.reserve() : undefined;
    if (turn) await sleep(turn, req.signal);
    if (req.signal?.aborted) throw new Error(`${req.method ?? 'GET'} ${req.path}: aborted`);
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const { agent, session, headers: auth, rejected } = await conn.prepare();
    const headers: Record<string, string | number> = { Accept: 'application/json', 'User-Agent': userAgent, ...auth };
    if (payload) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    const method = req.method ?? 'GET';
    const where = `${method} ${req.path}`;
    if (session && !session.http1Only) {
      try {
        const lowercase = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
        const answer = await session.request(method, fullPath(conn, req), lowercase, {
          body: payload,
          signal: req.signal,
          timeoutMs,
          wholeExchange: !o.headersOnly,
        });
        if (answer.status === 401) rejected();
        return {
          status: answer.status,
          retryAfter: headerValue(answer.headers['retry-after']),
          body: answer.stream,
          // The stream is closed (its connection carries on for the others).
          done: () => answer.stream.close(),
        };
      } catch (err) {
        if (!(err instanceof Http2Unsupported)) throw new Error(`${where}: ${messageOf(err)}`);
      }
    }
    return new Promise((resolve, reject) => {
      let response: http.IncomingMessage | undefined;
      const r = mod.request(
        {
          protocol: conn.url.protocol,
          hostname: conn.url.hostname,
          port: conn.url.port,
          path: fullPath(conn, req),
          method,
          headers,
          agent,
        },
        (res) => {
          response = res;
          // The credential was refused: the next request asks the plugin again (client-go's exec authenticator).
          if (res.statusCode === 401) rejected();
          if (o.headersOnly) clearTimeout(timer);
          res.once('end', done);
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: headerValue(res.headers['retry-after']),
            body: res,
            done,
          });
        },
      );
      // Before the response: fail the request. After it: end the body stream (its reader sees the end or 'aborted').
      const stop = (why: string) => {
        if (response) response.destroy();
        else r.destroy(new Error(why));
      };
      const timer = setTimeout(() => stop(`timed out after ${timeoutMs}ms`), timeoutMs);
      const onAbort = () => stop('aborted');
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
      };
      r.on('error', (err) => {
        done();
        reject(new Error(`${where}: ${err.message}`));
      });
      r.end(payload);
    });
  };

  /** The client; `limited`: its requests wait for the rate limiter. */
  const view = (limited: boolean): KubeClient => {
    /** One exchange: the status, the decoded body and the Retry-After header. */
    const once = async <T>(req: KubeRequest): Promise<ApiResponse<T> & { retryAfter?: string }> => {
      const { status, retryAfter, body: res, done } = await open(req, req.timeoutMs ?? defaults.timeoutMs, { limited });
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const c of res) {
          size += (c as Buffer).length;
          if (size > MAX_RESPONSE_BYTES) {
            res.destroy();
            throw new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`);
          }
          chunks.push(c as Buffer);
        }
      } catch (err) {
        throw new Error(`${req.method ?? 'GET'} ${req.path}: ${(err as Error).message}`);
      } finally {
        done();
      }
      let body: T | undefined;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as T;
      } catch {
        body = undefined;
      }
      return { status, body, retryAfter };
    };
    const client: KubeClient = {
      server: conn.url.toString(),
      async reload() {
        const old = conn;
        conn = connect(kubeconfigPath);
        old.destroy();
      },
      async request<T>(req: KubeRequest): Promise<ApiResponse<T>> {
        // client-go's checkWait: an answer that says when to come back (429, or a 5xx with
        // Retry-After) is asked again then, up to MAX_RETRIES times.
        for (let retries = 0; ; retries++) {
          const answer = await once<T>(req);
          const wait = retryAfterMs(answer.status, answer.retryAfter);
          if (wait === undefined || retries >= MAX_RETRIES || req.signal?.aborted)
            return { status: answer.status, body: answer.body };
          await sleep(wait, req.signal);
        }
      },
      post<T>(path: string, body: unknown, opts: { timeoutMs?: number; signal?: AbortSignal } = {}) {
        return client.request<T>({ method: 'POST', path, body, ...opts });
      },
      async watch<T>(
        req: Omit<KubeRequest, 'method' | 'body' | 'timeoutMs'>,
        onEvent: (e: WatchEvent<T>) => void,
      ): Promise<void> {
        const {
          status,
          body: res,
          done,
        } = await open({ ...req, query: { ...req.query, watch: 1 } }, defaults.timeoutMs, {
          headersOnly: true,
          limited,
        });
        try {
          if (status !== 200) {
            const chunks: Buffer[] = [];
            for await (const c of res) chunks.push(c as Buffer);
            let message = `watch ${req.path}: HTTP ${status}`;
            try {
              message = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message?: string }).message ?? message;
            } catch {
              /* not JSON */
            }
            throw new WatchHttpError(status, message);
          }
          let buf = '';
          res.setEncoding('utf8');
          for await (const chunk of res) {
            buf += chunk as string;
            if (buf.length > MAX_WATCH_EVENT_BYTES && buf.indexOf('\n') < 0)
              throw new Error(`watch ${req.path}: an event larger than ${MAX_WATCH_EVENT_BYTES} bytes`);
            let nl;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (line) onEvent(JSON.parse(line) as WatchEvent<T>);
            }
          }
          if (req.signal?.aborted) throw new Error('aborted');
        } finally {
          done();
        }
      },
      unthrottled: () => (limited ? view(false) : client),
    };
    return client;
  };
  return view(true);
}

/** client-go's maxRetries for answers that say when to come back. */
export const MAX_RETRIES = 10;

/** A header's value (the first, when repeated). */
const headerValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/**
 * How long to wait before asking again, as client-go's checkWait: a 429 or a 5xx that carries a
 * Retry-After of whole seconds; undefined otherwise (the answer stands). Pure.
 */
export function retryAfterMs(status: number, retryAfter: string | undefined): number | undefined {
  if (status !== 429 && status < 500) return undefined;
  const seconds = retryAfter?.trim();
  return seconds !== undefined && /^\d+$/.test(seconds) ? Number(seconds) * 1000 : undefined;
}

/**
 * Caps on what the apiserver may send: a whole response (lists) and one watch event (objects are ≤ 1.5 MiB in etcd).
 */
export const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;
export const MAX_WATCH_EVENT_BYTES = 16 * 1024 * 1024;

/** The Error for an unexpected answer: `<what>: HTTP <status>[: <the Status message>]`. */
export function apiError(what: string, r: ApiResponse<unknown>): Error {
  const message = (r.body as { message?: unknown } | undefined)?.message;
  return new Error(`${what}: HTTP ${r.status}${typeof message === 'string' && message ? `: ${message}` : ''}`);
}
