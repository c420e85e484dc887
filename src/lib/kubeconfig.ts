/**
 * Reads a kubeconfig file (clientcmd v1): the current context's cluster and user, with file
 * references resolved relative to the kubeconfig and *-data fields decoded. Only what a kubelet
 * needs: server, CA, client certificate/key, bearer token (or token file), TLS skip-verify.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';

/** Connection settings for one apiserver. */
export interface ApiConnection {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  insecureSkipTLSVerify?: boolean;
}

interface Named<T> { name: string; [k: string]: unknown; cluster?: T; user?: T; context?: T }
type Obj = Record<string, unknown>;

/** Loads `path`; throws with a message naming the file and what is wrong. */
export async function loadKubeconfig(path: string): Promise<ApiConnection> {
  const doc = parse(await readFile(path, 'utf8')) as Obj | null;
  if (!doc || typeof doc !== 'object') throw new Error(`kubeconfig ${path}: not a Config object`);
  const pick = (list: unknown, name: string | undefined, what: string): Obj => {
    const items = (Array.isArray(list) ? list : []) as Named<Obj>[];
    const it = name === undefined ? items[0] : items.find((x) => x.name === name);
    if (!it) throw new Error(`kubeconfig ${path}: ${what} ${name === undefined ? '' : `"${name}" `}not found`);
    return (it.cluster ?? it.user ?? it.context ?? {}) as Obj;
  };
  const ctxName = typeof doc['current-context'] === 'string' && doc['current-context'] ? doc['current-context'] : undefined;
  const ctx = pick(doc.contexts, ctxName, 'context');
  const cluster = pick(doc.clusters, ctx.cluster as string | undefined, 'cluster');
  const user = ctx.user === undefined && !Array.isArray(doc.users) ? {} : pick(doc.users, ctx.user as string | undefined, 'user');
  const base = dirname(path);
  const file = async (p: unknown) => readFile(isAbsolute(String(p)) ? String(p) : join(base, String(p)));
  const blob = async (o: Obj, field: string): Promise<Buffer | undefined> => {
    if (typeof o[`${field}-data`] === 'string') return Buffer.from(o[`${field}-data`] as string, 'base64');
    if (typeof o[field] === 'string' && o[field]) return file(o[field]);
    return undefined;
  };
  if (typeof cluster.server !== 'string' || !cluster.server) throw new Error(`kubeconfig ${path}: cluster has no server`);
  let token = typeof user.token === 'string' ? user.token : undefined;
  if (!token && typeof user.tokenFile === 'string') token = (await file(user.tokenFile)).toString('utf8').trim();
  return {
    server: cluster.server.replace(/\/+$/, ''),
    ca: await blob(cluster, 'certificate-authority'),
    cert: await blob(user, 'client-certificate'),
    key: await blob(user, 'client-key'),
    token,
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
  };
}
