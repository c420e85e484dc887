/**
 * A minimal JSON client for the apiserver over one keep-alive HTTPS agent: every call has a
 * deadline, and the bearer token / client key never appear in errors. Wraps what the kubelet
 * needs before a full client lands (TokenReview, SubjectAccessReview).
 */
import http from 'node:http';
import https from 'node:https';
import type { ApiConnection } from './kubeconfig.js';

/** An answer: HTTP status and the decoded JSON body (undefined when not JSON). */
export interface ApiResponse<T> { status: number; body: T | undefined }

/** Talks to one apiserver. `post` may block up to its timeout; it rejects on network errors and timeouts. */
export interface ApiClient { post<T>(path: string, body: unknown, opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ApiResponse<T>> }

/** Creates a client for `conn`; `timeoutMs` is the default deadline per call. */
export function createApiClient(conn: ApiConnection, defaults: { timeoutMs: number }): ApiClient {
  const url = new URL(conn.server);
  const isHttps = url.protocol === 'https:';
  const agent = isHttps
    ? new https.Agent({ keepAlive: true, ca: conn.ca, cert: conn.cert, key: conn.key, rejectUnauthorized: !conn.insecureSkipTLSVerify })
    : new http.Agent({ keepAlive: true });
  const prefix = url.pathname.replace(/\/+$/, '');
  return {
    post<T>(path: string, body: unknown, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ApiResponse<T>> {
      const payload = Buffer.from(JSON.stringify(body));
      const timeoutMs = opts.timeoutMs ?? defaults.timeoutMs;
      return new Promise((resolve, reject) => {
        const headers: Record<string, string | number> = { 'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': payload.length, 'User-Agent': 'tskubelet' };
        if (conn.token) headers.Authorization = `Bearer ${conn.token}`;
        const req = (isHttps ? https : http).request({ protocol: url.protocol, hostname: url.hostname, port: url.port, path: `${prefix}${path}`, method: 'POST', headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(timer);
            let parsed: T | undefined;
            try { parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as T; } catch { parsed = undefined; }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', (err) => { clearTimeout(timer); reject(new Error(`POST ${path}: ${err.message}`)); });
        });
        const timer = setTimeout(() => req.destroy(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs);
        const onAbort = () => req.destroy(new Error('aborted'));
        opts.signal?.addEventListener('abort', onAbort, { once: true });
        req.on('error', (err) => { clearTimeout(timer); opts.signal?.removeEventListener('abort', onAbort); reject(new Error(`POST ${path}: ${err.message}`)); });
        req.on('close', () => opts.signal?.removeEventListener('abort', onAbort));
        req.end(payload);
      });
    },
  };
}
