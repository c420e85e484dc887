/**
 * A bounded HTTP(S) GET for small documents (the manifest URL source): redirects followed as Go's
 * http.Client follows them (at most 10; Authorization and Cookie dropped when the host changes),
 * one deadline over the whole exchange, and a cap on the body that stops reading there.
 * On node:http, not fetch: fetch's parser is WebAssembly, which the kubelet's V8 (--lite-mode,
 * see bin/tskubelet.js) does not run.
 */
import http from 'node:http';
import https from 'node:https';
import { deadlineSignal } from './deadline.js';

/** The final answer: its status, and its body as UTF-8 text (undefined when longer than the cap). */
export interface GetResult {
  status: number;
  body: string | undefined;
}

/** Go's client gives up at the 10th redirect. */
const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** GETs `url` (http: or https:). Rejects on a network error, a timeout, an abort or too many redirects. */
export async function getText(
  url: string,
  o: { headers?: Record<string, string[]>; timeoutMs: number; maxBytes: number; signal?: AbortSignal },
): Promise<GetResult> {
  const deadline = deadlineSignal(o.timeoutMs, o.signal);
  let target = new URL(url);
  let headers = { ...o.headers };
  try {
    for (let hops = 0; ; hops++) {
      const r = await getOnce(target, headers, o.maxBytes, deadline.signal);
      if (!REDIRECTS.has(r.status) || r.location === undefined) return { status: r.status, body: r.body };
      // Go's CheckRedirect: the 10th redirect is not followed.
      if (hops + 1 === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects`);
      const next = new URL(r.location, target);
      if (next.protocol !== 'http:' && next.protocol !== 'https:')
        throw new Error(`redirect to an unsupported protocol ${next.protocol}`);
      if (next.host !== target.host)
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^(authorization|cookie)$/i.test(k)));
      target = next;
    }
  } finally {
    deadline.done();
  }
}

function getOnce(
  url: URL,
  headers: Record<string, string[]>,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ status: number; body: string | undefined; location?: string }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return Promise.reject(new Error(`unsupported protocol ${url.protocol}`));
  const get = url.protocol === 'https:' ? https.get : http.get;
  return new Promise((resolve, reject) => {
    const req = get(url, { headers, signal }, (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      const tooLarge = () => {
        res.destroy();
        resolve({ status, body: undefined, location });
      };
      if (Number(res.headers['content-length'] ?? 0) > maxBytes) return tooLarge();
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
        if (n > maxBytes) return tooLarge();
        chunks.push(c);
      });
      res.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8'), location }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}
