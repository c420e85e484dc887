/**
 * Exec credential plugins (client-go's client.authentication.k8s.io exec provider), as a
 * kubeconfig's `users[].user.exec` names them — how EKS-style nodes give their kubelet a token
 * (`aws eks get-token`) or a client certificate. The command runs with the kubeconfig's `env`
 * and `KUBERNETES_EXEC_INFO` (an ExecCredential whose spec says it is not interactive, plus the
 * cluster with `provideClusterInfo`) and prints an ExecCredential whose status holds a `token`,
 * or a `clientCertificateData` + `clientKeyData` pair, and optionally an `expirationTimestamp`.
 *
 * As client-go: the credential is kept until it expires, and a 401 answer to a request made with
 * it makes the next request run the plugin again; concurrent requests share one run; a relative
 * command with a slash is relative to the kubeconfig's directory; `interactiveMode: Always`
 * cannot work without a terminal. Unlike client-go a run is bounded (60 s, 1 MiB of output), so a
 * plugin that hangs cannot hold the kubelet's requests forever. Its stderr goes to the kubelet's,
 * as client-go's does; a credential is never put in an error message.
 */
import { dirname, isAbsolute, join } from 'node:path';
import { runPlugin } from './run-plugin.js';

export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];
const RUN_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** A kubeconfig's `user.exec`, checked. */
export interface ExecConfig {
  apiVersion: string;
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  provideClusterInfo: boolean;
}

/** What a plugin gave. */
export interface ExecCredential {
  token?: string;
  cert?: Buffer;
  key?: Buffer;
  /** ms since the epoch; absent: valid until a 401. */
  expiresAt?: number;
}

/** The cluster a plugin is told about (provideClusterInfo), in the ExecCredential's field names. */
export type ExecClusterInfo = Record<string, unknown>;

/**
 * Checks a kubeconfig's `user.exec` (`fail` throws with the kubeconfig's name); the command is resolved against
 * `kubeconfigPath`.
 */
export function execConfigOf(raw: unknown, kubeconfigPath: string, fail: (why: string) => never): ExecConfig {
  const e = (raw ?? {}) as Record<string, unknown>;
  const apiVersion = e.apiVersion;
  if (typeof apiVersion !== 'string' || !EXEC_API_VERSIONS.includes(apiVersion))
    return fail(
      `exec plugin: apiVersion must be one of ${EXEC_API_VERSIONS.join(', ')} (got ${JSON.stringify(apiVersion ?? '')})`,
    );
  if (typeof e.command !== 'string' || !e.command) return fail('exec plugin: command is required');
  const mode = e.interactiveMode;
  if (apiVersion.endsWith('/v1') && mode === undefined)
    return fail('exec plugin: interactiveMode must be specified for client.authentication.k8s.io/v1');
  if (mode !== undefined && !['Never', 'IfAvailable', 'Always'].includes(mode as string))
    return fail(`exec plugin: invalid interactiveMode ${JSON.stringify(mode)}`);
  if (mode === 'Always')
    return fail('exec plugin: interactiveMode Always needs a terminal, which the kubelet does not have');
  const args = e.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
    return fail('exec plugin: args must be a list of strings');
  const env = e.env ?? [];
  if (
    !Array.isArray(env) ||
    !env.every(
      (v) =>
        typeof (v as { name?: unknown })?.name === 'string' && typeof (v as { value?: unknown }).value === 'string',
    )
  )
    return fail('exec plugin: env must be a list of {name, value} strings');
  const command =
    e.command.includes('/') && !isAbsolute(e.command) ? join(dirname(kubeconfigPath), e.command) : e.command;
  return {
    apiVersion,
    command,
    args: args as string[],
    env: env as ExecConfig['env'],
    provideClusterInfo: e.provideClusterInfo === true,
  };
}

/** The credential in a plugin's output, checked as client-go does; throws naming what is wrong (never a value). */
export function parseExecCredential(stdout: string, apiVersion: string): ExecCredential {
  let doc: { apiVersion?: unknown; kind?: unknown; status?: Record<string, unknown> };
  try {
    doc = JSON.parse(stdout) as typeof doc;
  } catch {
    throw new Error('exec plugin: its output is not an ExecCredential (not JSON)');
  }
  if (doc?.kind !== 'ExecCredential') throw new Error('exec plugin: its output is not an ExecCredential (kind)');
  if (doc.apiVersion !== apiVersion)
    throw new Error(`exec plugin: it answered ${JSON.stringify(doc.apiVersion)}, was configured to use ${apiVersion}`);
  const s = doc.status;
  if (!s || typeof s !== 'object') throw new Error('exec plugin: no status in its ExecCredential');
  const str = (k: string) => (typeof s[k] === 'string' && s[k] ? s[k] : undefined);
  const token = str('token');
  const cert = str('clientCertificateData');
  const key = str('clientKeyData');
  if (!cert !== !key) throw new Error('exec plugin: clientCertificateData and clientKeyData must be given together');
  if (!token && !cert) throw new Error('exec plugin: its ExecCredential has neither a token nor a client certificate');
  let expiresAt: number | undefined;
  if (s.expirationTimestamp !== undefined && s.expirationTimestamp !== null) {
    expiresAt = typeof s.expirationTimestamp === 'string' ? Date.parse(s.expirationTimestamp) : NaN;
    if (Number.isNaN(expiresAt)) throw new Error('exec plugin: invalid expirationTimestamp');
  }
  return { token, cert: cert ? Buffer.from(cert) : undefined, key: key ? Buffer.from(key) : undefined, expiresAt };
}

/** Runs the plugin once and returns its credential. */
export function runExecPlugin(cfg: ExecConfig, cluster: ExecClusterInfo | undefined): Promise<ExecCredential> {
  const info = {
    apiVersion: cfg.apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(cfg.provideClusterInfo && cluster ? { cluster } : {}) },
  };
  const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
  for (const { name, value } of cfg.env) env[name] = value;
  return runPlugin({
    command: cfg.command,
    args: cfg.args,
    env,
    timeoutMs: RUN_TIMEOUT_MS,
    maxBytes: MAX_OUTPUT_BYTES,
    what: 'exec plugin',
  }).then((out) => parseExecCredential(out, cfg.apiVersion));
}

/** A plugin's credential, kept until it expires or is rejected (`invalidate`); concurrent callers share one run. */
export function execCredentialSource(
  cfg: ExecConfig,
  o: { cluster?: ExecClusterInfo; now?: () => number; run?: typeof runExecPlugin } = {},
): { get(): Promise<ExecCredential>; invalidate(rejected: ExecCredential): void } {
  const now = o.now ?? Date.now;
  const run = o.run ?? runExecPlugin;
  let current: ExecCredential | undefined;
  let running: Promise<ExecCredential> | undefined;
  return {
    get() {
      if (current && (current.expiresAt === undefined || now() < current.expiresAt)) return Promise.resolve(current);
      running ??= run(cfg, o.cluster).then(
        (c) => {
          running = undefined;
          current = c;
          return c;
        },
        (err: unknown) => {
          running = undefined;
          throw err;
        },
      );
      return running;
    },
    invalidate(rejected) {
      if (current === rejected) current = undefined;
    },
  };
}
