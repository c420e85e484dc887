/**
 * The httpGet lifecycle hook (upstream lifecycle handlerRunner.runHTTPHandler): a GET with upstream's
 * request (`User-Agent: kube-lifecycle/<major.minor>`), HTTPS unverified, redirects followed on the
 * same host only. Any answer succeeds, whatever its status (upstream reads no status code); only a
 * request that gets no answer fails, with Go's error. An HTTPS request a server answers in plain
 * HTTP is made again over HTTP without its Authorization header, for hooks written before the
 * scheme was honoured: when that succeeds it is told as a `LifecycleHTTPFallback` warning and
 * counted in kubelet_lifecycle_handler_http_fallbacks_total.
 */
import type { Container } from '../../api/types.js';
import { messageOf } from '../../lib/errors.js';
import { HTTP_RESPONSE_TO_HTTPS_CLIENT } from '../prober/http-get.js';
import {
  getFollowingLocalRedirects,
  httpGetRequest,
  httpGetUserAgent,
  type ProbeAction,
} from '../prober/probe-handlers.js';

const USER_AGENT = httpGetUserAgent('lifecycle');

/** Runs the hook; resolves with Go's error text when it failed, undefined when it succeeded. */
export async function runHttpHook(
  action: NonNullable<ProbeAction['httpGet']>,
  target: { container: Container; podIP: string; timeoutMs: number },
  /** An HTTPS hook that succeeded over HTTP instead, at `host` (host:port). */
  onFallback: (host: string) => void,
): Promise<string | undefined> {
  const request = httpGetRequest(action, target, USER_AGENT);
  if ('error' in request) return request.error;
  const deadline = Date.now() + target.timeoutMs;
  try {
    await getFollowingLocalRedirects(request.url, request.headers, deadline);
    return undefined;
  } catch (err) {
    if (request.url.protocol !== 'https:' || !messageOf(err).endsWith(HTTP_RESPONSE_TO_HTTPS_CLIENT))
      return messageOf(err);
    const url = httpFallbackUrl(request.url);
    const headers = request.headers.filter(([name]) => name.toLowerCase() !== 'authorization');
    try {
      await getFollowingLocalRedirects(url, headers, deadline);
    } catch {
      return messageOf(err);
    }
    onFallback(hostWithPort(url));
    return undefined;
  }
}

/**
 * The same URL over HTTP, on the same port (the URL leaves HTTPS's default out, which HTTP's would then replace). Pure.
 */
export function httpFallbackUrl(https: URL): URL {
  const url = new URL(https);
  const port = url.port || '443';
  url.protocol = 'http:';
  url.port = port;
  return url;
}

/** host:port as Go's URL.Host has it (the port is always written in the request's URL). */
function hostWithPort(url: URL): string {
  return url.port ? url.host : `${url.host}:${url.protocol === 'https:' ? 443 : 80}`;
}
