/**
 * imagePullSecrets → CRI AuthConfig (upstream credentialprovider keyring, as the kubelet uses
 * it for pulls): `.dockerconfigjson` (`{"auths": {...}}`) and legacy `.dockercfg` secrets; keys
 * may be URLs, hosts, host/path prefixes or `*.` globs; docker.io, index.docker.io and
 * registry-1.docker.io are one registry; the image's registry defaults to docker.io. Every
 * matching credential is returned, most specific first (the puller tries them in order). Pure but
 * for remembering which secret each credential came from (secretOf).
 */
import { createHash } from 'node:crypto';
import type * as cri from '../../cri/types.js';

/** The CRI auth type. */
export type AuthConfig = cri.AuthConfig;

/** A Secret as read from the API (data values base64). */
export interface PullSecret {
  metadata?: { uid?: string; namespace?: string; name?: string };
  type?: string;
  data?: Record<string, string>;
}

/** An API object a credential came from, as the pull records name it. */
export interface ObjectCoordinates {
  uid: string;
  namespace: string;
  name: string;
}

/**
 * Where each credential came from: the pull secret credentialsFor read it from, or the service
 * account a credential provider was given a token of (the pull records name either).
 */
const sources = new WeakMap<AuthConfig, { secret?: ObjectCoordinates; serviceAccount?: ObjectCoordinates }>();

/** The pull secret `auth` came from, when it came from one. */
export function secretOf(auth: AuthConfig): ObjectCoordinates | undefined {
  return sources.get(auth)?.secret;
}

/** The service account whose token got `auth` from a credential provider, when one did. */
export function serviceAccountOf(auth: AuthConfig): ObjectCoordinates | undefined {
  return sources.get(auth)?.serviceAccount;
}

/** Notes that a credential provider gave `auths` for a token of `serviceAccount`. */
export function fromServiceAccount(auths: readonly AuthConfig[], serviceAccount: ObjectCoordinates): void {
  for (const auth of auths) sources.set(auth, { serviceAccount });
}

/** A digest of what `auth` would send (the pull records compare credentials by it, never store them). Pure. */
export function credentialHash(auth: AuthConfig): string {
  return createHash('sha256')
    .update(JSON.stringify([auth.username, auth.password, auth.auth, auth.identity_token, auth.registry_token]))
    .digest('hex');
}

export interface KeyringEntry {
  host: string;
  path: string;
  auth: AuthConfig;
}

const DOCKER_HUB = 'docker.io';
const hub = (h: string) => (h === 'index.docker.io' || h === 'registry-1.docker.io' ? DOCKER_HUB : h);

/** Registry host and repository path of an image reference ("busybox" → docker.io, library/busybox). */
export function imageRegistry(image: string): { host: string; path: string } {
  const name = image.split('@')[0];
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const isHost = first.includes('.') || first.includes(':') || first === 'localhost';
  const host = isHost ? hub(first) : DOCKER_HUB;
  let path = (isHost ? name.slice(slash + 1) : name).replace(/:[^/]*$/, '');
  if (host === DOCKER_HUB && !path.includes('/')) path = `library/${path}`;
  return { host, path };
}

function parseKey(key: string): { host: string; path: string } {
  const k = key.replace(/^[a-z]+:\/\//, '').replace(/\/+$/, '');
  const slash = k.indexOf('/');
  const host = hub(slash < 0 ? k : k.slice(0, slash));
  const path = slash < 0 ? '' : k.slice(slash + 1);
  return { host, path: host === DOCKER_HUB && /^v[12]$/.test(path) ? '' : path };
}

function hostMatches(pattern: string, host: string): boolean {
  if (!pattern.includes('*')) return pattern === host;
  const re = new RegExp(
    `^${pattern
      .split('.')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^.]*'))
      .join('\\.')}$`,
  );
  return re.test(host);
}

/** One registry's entry of a docker config, as written by `docker login` (fields may be missing). */
interface DockerAuth {
  username?: string;
  password?: string;
  auth?: string;
  identitytoken?: string;
  registrytoken?: string;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function entriesOf(secret: PullSecret): KeyringEntry[] {
  const data = secret.data ?? {};
  const raw = data['.dockerconfigjson'] ?? data['.dockercfg'];
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64').toString('utf8'));
  } catch {
    return [];
  }
  if (!isObject(parsed)) return [];
  const auths = data['.dockerconfigjson'] ? parsed.auths : parsed;
  return isObject(auths) ? authEntries(auths) : [];
}

/** A docker config's `auths` (key → credentials) as keyring entries. */
export function authEntries(auths: Record<string, unknown>): KeyringEntry[] {
  return Object.entries(auths).map(([key, entry]) => {
    const v = (isObject(entry) ? entry : {}) as DockerAuth;
    let { username, password } = v;
    if (!username && typeof v.auth === 'string') {
      const dec = Buffer.from(v.auth, 'base64').toString('utf8');
      const i = dec.indexOf(':');
      if (i > 0) {
        username = dec.slice(0, i);
        password = dec.slice(i + 1);
      }
    }
    const { host, path } = parseKey(key);
    // server_address stays empty, as upstream's keyring leaves it: runtimes then use the credentials for the image's
    // registry.
    return {
      host,
      path,
      auth: { username, password, auth: v.auth, identity_token: v.identitytoken, registry_token: v.registrytoken },
    };
  });
}

/** Whether keyring key `key` (URL, host, host/path prefix or `*.` glob) covers `image`. */
export function keyMatches(key: string, image: string): boolean {
  return entryMatches(parseKey(key), imageRegistry(image));
}

function entryMatches(e: { host: string; path: string }, img: { host: string; path: string }): boolean {
  return hostMatches(e.host, img.host) && (!e.path || img.path === e.path || img.path.startsWith(`${e.path}/`));
}

/** The credentials of `entries` that cover `image`, most specific first. */
export function credentialsOf(entries: KeyringEntry[], image: string): AuthConfig[] {
  const img = imageRegistry(image);
  return entries
    .filter((e) => entryMatches(e, img))
    .sort((a, b) => b.host.length + b.path.length - (a.host.length + a.path.length))
    .map((e) => e.auth);
}

/** The credentials for `image` from the pod's pull secrets, most specific first. */
export function credentialsFor(image: string, secrets: PullSecret[]): AuthConfig[] {
  return credentialsOf(
    secrets.flatMap((secret) => {
      const entries = entriesOf(secret);
      const { uid, namespace, name } = secret.metadata ?? {};
      if (uid && namespace && name) for (const e of entries) sources.set(e.auth, { secret: { uid, namespace, name } });
      return entries;
    }),
    image,
  );
}
