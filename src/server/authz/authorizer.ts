/**
 * The authorization seam and the upstream request-attributes mapping (kubelet auth.go):
 * resource "nodes", name = node name, verb from the method, subresource by path. With
 * KubeletFineGrainedAuthz (GA in v1.36) a request may be asked as several attributes in turn:
 * /pods and /runningpods/ as nodes/pods, /healthz as nodes/healthz, /configz as nodes/configz,
 * each then as nodes/proxy; the first allowed one lets the request through.
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

/** The subresources asked, as Go prints a slice: `[pods proxy]`. */
const subresourceList = (asked: readonly RequestAttributes[]) => `[${asked.map((a) => a.subresource).join(' ')}]`;

/** The 403 body, as upstream: `Forbidden (user=…, verb=…, resource=…, subresource(s)=[…])`. */
export function forbiddenMessage(asked: readonly RequestAttributes[]): string {
  const a = asked[0];
  return `Forbidden (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=${subresourceList(asked)})\n`;
}

/** The 500 body when the authorizer fails. */
export function authorizationErrorMessage(asked: readonly RequestAttributes[]): string {
  const a = asked[0];
  return `Authorization error (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=${subresourceList(asked)})`;
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

/** `path` is `root` or under it (upstream isSubpath). */
const isSubpath = (path: string, root: string) => path === root || path.startsWith(`${root}/`);

/** The subresources a request is asked as, in turn (pure). */
export function subresourcesOf(path: string): string[] {
  const fineGrained = isSubpath(path, '/pods')
    ? 'pods'
    : isSubpath(path, '/healthz')
      ? 'healthz'
      : isSubpath(path, '/configz')
        ? 'configz'
        : isSubpath(path, '/runningpods')
          ? 'pods'
          : undefined;
  const coarse = isSubpath(path, '/stats')
    ? 'stats'
    : isSubpath(path, '/metrics')
      ? 'metrics'
      : isSubpath(path, '/logs')
        ? 'log'
        : isSubpath(path, '/checkpoint')
          ? 'checkpoint'
          : isSubpath(path, '/statusz')
            ? 'statusz'
            : isSubpath(path, '/flagz')
              ? 'flagz'
              : 'proxy';
  return fineGrained ? [fineGrained, coarse] : [coarse];
}

/** Maps a request to the attributes it is asked as, in order (pure). */
export function requestAttributes(user: UserInfo, method: string, path: string, nodeName: string): RequestAttributes[] {
  const p = cleanPath(path.split('?')[0]);
  return subresourcesOf(p).map((subresource) => ({
    user,
    verb: verbs[method.toUpperCase()] ?? '',
    resource: 'nodes',
    name: nodeName,
    subresource,
    apiGroup: '',
    apiVersion: 'v1',
    path: p,
  }));
}
