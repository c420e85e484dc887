/**
 * Reads a kubeconfig the way client-go does for a kubelet: the current context's cluster
 * (`server`, `certificate-authority[-data]`, `insecure-skip-tls-verify`, `tls-server-name`) and
 * user (`client-certificate[-data]` + `client-key[-data]`, `token`, `tokenFile`, `username` +
 * `password`). Relative file paths are relative to the kubeconfig's directory. A token file is
 * re-read at most once a minute, as client-go's cached file token source does. An exec credential
 * plugin (`exec`, lib/exec-credential.ts) serves when the user has no static credentials, as in
 * client-go; auth providers are refused with a clear error.
 *
 * Why not @kubernetes/client-node's KubeConfig: importing it costs ~0.5 s and ~28 MB of heap
 * (~75 MB of RSS) for the few fields above.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { execConfigOf, execCredentialSource } from './exec-credential.js';
import { parseYamlBounded, readTextBoundedSync } from './bounded-yaml.js';

type ExecCredentialSource = ReturnType<typeof execCredentialSource>;

/** What a client needs from a kubeconfig. */
export interface KubeconfigCredentials {
  server: URL;
  /** The cluster's `proxy-url`, when it has one. */
  proxyUrl?: string;
  /** TLS options for node:https (undefined fields are left to the defaults). */
  tls: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized: boolean; servername?: string };
  /** The Authorization header, if the user has one (a token file is re-read at most once a minute). */
  authorization(): string | undefined;
  /** The user's exec credential plugin, when it has one and no static credentials. */
  exec?: ExecCredentialSource;
}

type Named<T> = { name?: string } & T;
interface Doc {
  'current-context'?: string;
  clusters?: Named<{ cluster?: Record<string, unknown> }>[];
  users?: Named<{ user?: Record<string, unknown> }>[];
  contexts?: Named<{ context?: { cluster?: string; user?: string } }>[];
}

const TOKEN_FILE_PERIOD_MS = 60_000;

/** Loads `path`; throws an Error naming the file and the problem (never a credential). */
export function loadKubeconfig(path: string, now: () => number = Date.now): KubeconfigCredentials {
  const fail = (why: string): never => {
    throw new Error(`kubeconfig ${path}: ${why}`);
  };
  let doc: Doc;
  try {
    doc = (parseYamlBounded(readTextBoundedSync(path)) ?? {}) as Doc;
  } catch (err) {
    return fail((err as Error).message);
  }
  if (typeof doc !== 'object') return fail('not a kubeconfig');
  const byName = <T>(list: Named<T>[] | undefined, name: string | undefined) =>
    (list ?? []).find((x) => x?.name === name);
  const ctx = byName(doc.contexts, doc['current-context'])?.context;
  if (!ctx) return fail(`context ${JSON.stringify(doc['current-context'] ?? '')} not found`);
  const cluster = byName(doc.clusters, ctx.cluster)?.cluster;
  if (!cluster || typeof cluster.server !== 'string' || !cluster.server)
    return fail('the current context has no cluster server');
  const user = byName(doc.users, ctx.user)?.user ?? {};
  const str = (o: Record<string, unknown>, k: string) => (typeof o[k] === 'string' && o[k] ? o[k] : undefined);
  const file = (p: string) => {
    try {
      return readFileSync(isAbsolute(p) ? p : join(dirname(path), p));
    } catch (err) {
      return fail(`${(err as NodeJS.ErrnoException).code ?? 'error'} reading ${p}`);
    }
  };
  const material = (o: Record<string, unknown>, data: string, fileKey: string) => {
    const d = str(o, data);
    if (d) return Buffer.from(d, 'base64');
    const f = str(o, fileKey);
    return f ? file(f) : undefined;
  };
  if (user['auth-provider'])
    return fail('auth providers are not supported; use a client certificate, a token or an exec credential plugin');

  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    return fail(`invalid server URL ${JSON.stringify(cluster.server)}`);
  }
  const tls = {
    ca: material(cluster, 'certificate-authority-data', 'certificate-authority'),
    cert: material(user, 'client-certificate-data', 'client-certificate'),
    key: material(user, 'client-key-data', 'client-key'),
    rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
    servername: str(cluster, 'tls-server-name'),
  };
  if (!tls.cert !== !tls.key) return fail('client certificate and client key must be given together');

  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  const basic =
    str(user, 'username') !== undefined
      ? `Basic ${Buffer.from(`${str(user, 'username')}:${str(user, 'password') ?? ''}`).toString('base64')}`
      : undefined;
  let cached: { value: string; at: number } | undefined;
  const authorization = (): string | undefined => {
    if (token) return `Bearer ${token}`;
    if (tokenFile) {
      if (!cached || now() - cached.at >= TOKEN_FILE_PERIOD_MS)
        cached = { value: file(tokenFile).toString('utf8').trim(), at: now() };
      return `Bearer ${cached.value}`;
    }
    return basic;
  };
  authorization(); // a missing token file is an error at load, not at the first request
  // As client-go: static credentials win over the plugin.
  const exec =
    user.exec && !token && !tokenFile && !basic && !tls.cert
      ? execCredentialSource(execConfigOf(user.exec, path, fail), {
          cluster: {
            server: cluster.server,
            'tls-server-name': tls.servername,
            'insecure-skip-tls-verify': tls.rejectUnauthorized ? undefined : true,
            'certificate-authority-data': tls.ca?.toString('base64'),
          },
          now,
        })
      : undefined;
  return { server, proxyUrl: str(cluster, 'proxy-url'), tls, authorization, exec };
}
