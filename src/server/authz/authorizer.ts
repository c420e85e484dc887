/**
 * The authorization seam and the upstream request-attributes mapping (kubelet auth.go):
 * resource "nodes", name = node name, verb from the method, subresource by path.
 */
import type { UserInfo } from '../authn/authenticator.js';

/** What a request asks to do. */
export interface RequestAttributes { user: UserInfo; verb: string; resource: 'nodes'; name: string; subresource: string; apiGroup: ''; apiVersion: 'v1'; path: string }

/** A decision. */
export interface Decision { allowed: boolean; reason?: string }

/** Decides requests. May block (webhooks). */
export interface Authorizer { authorize(attrs: RequestAttributes): Promise<Decision> }

/** Allows everything an authenticated user asks. */
export const alwaysAllow: Authorizer = { async authorize() { return { allowed: true }; } };

const verbs: Record<string, string> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** Maps a request to its attributes (pure). */
export function requestAttributes(user: UserInfo, method: string, path: string, nodeName: string): RequestAttributes {
  const p = path.split('?')[0];
  let subresource = 'proxy';
  if (p === '/stats' || p.startsWith('/stats/')) subresource = 'stats';
  else if (p === '/metrics' || p.startsWith('/metrics/')) subresource = 'metrics';
  else if (p === '/logs' || p.startsWith('/logs/')) subresource = 'log';
  else if (p.startsWith('/checkpoint/')) subresource = 'checkpoint';
  return { user, verb: verbs[method.toUpperCase()] ?? method.toLowerCase(), resource: 'nodes', name: nodeName, subresource, apiGroup: '', apiVersion: 'v1', path: p };
}
