/**
 * The authorization seam and the upstream request-attributes mapping (kubelet auth.go):
 * resource "nodes", name = node name, verb from the method, subresource by path.
 */
import type { UserInfo } from '../authn/authenticator.js';

/** What a request asks to do. */
export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  resource: 'nodes';
  name: string;
  subresource: string;
  apiGroup: '';
  apiVersion: 'v1';
  path: string;
}

/** A decision. */
export interface Decision {
  allowed: boolean;
  reason?: string;
}

/** Decides requests. May block (webhooks); rejects when it cannot decide (the server answers 500). */
export interface Authorizer {
  authorize(attrs: RequestAttributes): Promise<Decision>;
}

/** The 403 body, as upstream: `Forbidden (user=…, verb=…, resource=…, subresource(s)=[…])`. */
export function forbiddenMessage(a: RequestAttributes): string {
  return `Forbidden (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${a.subresource}])\n`;
}

/** The 500 body when the authorizer fails. */
export function authorizationErrorMessage(a: RequestAttributes): string {
  return `Authorization error (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${a.subresource}])`;
}

/** Allows everything an authenticated user asks. */
export const alwaysAllow: Authorizer = {
  async authorize() {
    return { allowed: true };
  },
};

// As upstream (kubelet auth.go): other methods, HEAD included, map to an empty verb.
const verbs: Record<string, string> = { POST: 'create', GET: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** Go's path.Clean of the decoded URL path (upstream authorizes the cleaned path). */
export function cleanPath(raw: string): string {
  let p: string;
  try {
    p = decodeURIComponent(raw);
  } catch {
    p = raw;
  }
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}

/** Maps a request to its attributes (pure). */
export function requestAttributes(user: UserInfo, method: string, path: string, nodeName: string): RequestAttributes {
  const p = cleanPath(path.split('?')[0]);
  let subresource = 'proxy';
  if (p === '/stats' || p.startsWith('/stats/')) subresource = 'stats';
  else if (p === '/metrics' || p.startsWith('/metrics/')) subresource = 'metrics';
  else if (p === '/logs' || p.startsWith('/logs/')) subresource = 'log';
  else if (p.startsWith('/checkpoint/')) subresource = 'checkpoint';
  return {
    user,
    verb: verbs[method.toUpperCase()] ?? '',
    resource: 'nodes',
    name: nodeName,
    subresource,
    apiGroup: '',
    apiVersion: 'v1',
    path: p,
  };
}
