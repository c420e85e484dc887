/**
 * Exec credential plugins: the kubeconfig stanza checked as client-go does, real plugin processes
 * (shell scripts) run with KUBERNETES_EXEC_INFO and the kubeconfig's env, their ExecCredential
 * checked, the credential kept until it expires or is refused, and requests through the
 * apiserver client carrying it (a real HTTP server that refuses a token once).
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  execConfigOf,
  execCredentialSource,
  parseExecCredential,
  runExecPlugin,
  type ExecConfig,
} from '../../src/lib/exec-credential.js';
import { createKubeClient } from '../../src/lib/kube-client.js';
import { kubeconfigText } from '../fixtures/kubeconfig.js';
import { loadKubeconfig } from '../../src/lib/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-exec-cred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const V1 = 'client.authentication.k8s.io/v1';
const fail = (why: string): never => {
  throw new Error(why);
};
/** A plugin script: counts its runs in `<name>.count`, keeps its KUBERNETES_EXEC_INFO and env, prints `body`. */
function plugin(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh\necho x >> "${path}.count"\nprintf '%s' "$KUBERNETES_EXEC_INFO" > "${path}.info"\necho "$GREETING" > "${path}.env"\n${body}\n`,
  );
  chmodSync(path, 0o755);
  return path;
}
const runs = (path: string) => readFileSync(`${path}.count`, 'utf8').split('\n').filter(Boolean).length;
const cred = (status: Record<string, unknown>, apiVersion = V1) =>
  JSON.stringify({ apiVersion, kind: 'ExecCredential', status });
const cfg = (command: string, more: Partial<ExecConfig> = {}): ExecConfig => ({
  apiVersion: V1,
  command,
  args: [],
  env: [],
  provideClusterInfo: false,
  ...more,
});

describe('the exec stanza', () => {
  it('needs a known apiVersion, a command, and for v1 an interactiveMode other than Always', () => {
    expect(
      execConfigOf(
        { apiVersion: V1, command: 'aws', args: ['eks', 'get-token'], interactiveMode: 'Never' },
        '/etc/k/kubeconfig',
        fail,
      ),
    ).toEqual({
      apiVersion: V1,
      command: 'aws',
      args: ['eks', 'get-token'],
      env: [],
      provideClusterInfo: false,
    });
    expect(() =>
      execConfigOf({ apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'x' }, '/k', fail),
    ).toThrow(/apiVersion must be one of/);
    expect(() => execConfigOf({ apiVersion: V1, interactiveMode: 'Never' }, '/k', fail)).toThrow(/command is required/);
    expect(() => execConfigOf({ apiVersion: V1, command: 'x' }, '/k', fail)).toThrow(
      /interactiveMode must be specified/,
    );
    expect(() => execConfigOf({ apiVersion: V1, command: 'x', interactiveMode: 'Always' }, '/k', fail)).toThrow(
      /needs a terminal/,
    );
    expect(() =>
      execConfigOf({ apiVersion: V1, command: 'x', interactiveMode: 'Never', env: [{ name: 'A' }] }, '/k', fail),
    ).toThrow(/env must be/);
    // v1beta1 does not need interactiveMode.
    expect(execConfigOf({ apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'x' }, '/k', fail).command).toBe(
      'x',
    );
  });

  it('resolves a relative command with a slash against the kubeconfig directory, and leaves a bare name to PATH', () => {
    expect(
      execConfigOf({ apiVersion: V1, command: './bin/get-token', interactiveMode: 'Never' }, '/etc/k/kubeconfig', fail)
        .command,
    ).toBe('/etc/k/bin/get-token');
    expect(
      execConfigOf({ apiVersion: V1, command: 'get-token', interactiveMode: 'Never' }, '/etc/k/kubeconfig', fail)
        .command,
    ).toBe('get-token');
  });
});

describe('the ExecCredential a plugin prints', () => {
  it('gives a token or a client certificate pair, with an optional expiry', () => {
    expect(parseExecCredential(cred({ token: 't', expirationTimestamp: '2026-11-24T10:00:00Z' }), V1)).toEqual({
      token: 't',
      cert: undefined,
      key: undefined,
      expiresAt: Date.parse('2026-11-24T10:00:00Z'),
    });
    const pair = parseExecCredential(cred({ clientCertificateData: 'CERT', clientKeyData: 'KEY' }), V1);
    expect([pair.cert?.toString(), pair.key?.toString(), pair.expiresAt]).toEqual(['CERT', 'KEY', undefined]);
  });

  it('is refused when it is not one, is of another version, or holds no usable credential — without quoting a value', () => {
    expect(() => parseExecCredential('SECRET', V1)).toThrow(/not JSON/);
    expect(() => parseExecCredential(cred({ token: 'SECRET' }, 'client.authentication.k8s.io/v1beta1'), V1)).toThrow(
      /was configured to use/,
    );
    expect(() => parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential' }), V1)).toThrow(
      /no status/,
    );
    expect(() => parseExecCredential(cred({}), V1)).toThrow(/neither a token nor a client certificate/);
    expect(() => parseExecCredential(cred({ clientCertificateData: 'SECRET' }), V1)).toThrow(/together/);
    expect(() => parseExecCredential(cred({ token: 'SECRET', expirationTimestamp: 'soon' }), V1)).toThrow(
      /expirationTimestamp/,
    );
    for (const bad of ['SECRET', cred({ token: 'SECRET', expirationTimestamp: 'soon' })])
      expect(() => parseExecCredential(bad, V1)).toThrow(
        expect.objectContaining({ message: expect.not.stringContaining('SECRET') }) as Error,
      );
  });
});

describe('running a plugin', () => {
  it('passes KUBERNETES_EXEC_INFO (not interactive; the cluster with provideClusterInfo) and the env', async () => {
    const p = plugin('info', `echo '${cred({ token: 'tok' })}'`);
    const c = await runExecPlugin(cfg(p, { env: [{ name: 'GREETING', value: 'hello' }], provideClusterInfo: true }), {
      server: 'https://api:6443',
    });
    expect(c.token).toBe('tok');
    expect(JSON.parse(readFileSync(`${p}.info`, 'utf8'))).toEqual({
      apiVersion: V1,
      kind: 'ExecCredential',
      spec: { interactive: false, cluster: { server: 'https://api:6443' } },
    });
    expect(readFileSync(`${p}.env`, 'utf8').trim()).toBe('hello');
    await runExecPlugin(cfg(p), { server: 'https://api:6443' });
    expect(JSON.parse(readFileSync(`${p}.info`, 'utf8')).spec).toEqual({ interactive: false });
  });

  it('reports a failing, missing or flooding plugin', async () => {
    await expect(runExecPlugin(cfg(plugin('fails', 'exit 3')), undefined)).rejects.toThrow(/failed with exit code 3/);
    await expect(runExecPlugin(cfg(join(dir, 'absent')), undefined)).rejects.toThrow(/cannot run .*absent: ENOENT/);
    await expect(runExecPlugin(cfg(plugin('flood', 'head -c 2000000 /dev/zero')), undefined)).rejects.toThrow(
      /more than 1048576 bytes/,
    );
  });
});

describe('the credential source', () => {
  it('keeps a credential until it expires or is refused, and shares one run between concurrent callers', async () => {
    const p = plugin('counted', `echo '${cred({ token: 'tok', expirationTimestamp: '2026-11-24T10:00:00Z' })}'`);
    let now = Date.parse('2026-11-24T09:00:00Z');
    const src = execCredentialSource(cfg(p), { now: () => now });
    const [a, b] = await Promise.all([src.get(), src.get()]);
    expect(a).toBe(b);
    expect(runs(p)).toBe(1);
    await src.get();
    expect(runs(p)).toBe(1);
    now = Date.parse('2026-11-24T10:00:00Z');
    const c = await src.get();
    expect(runs(p)).toBe(2);
    now = Date.parse('2026-11-24T09:30:00Z');
    src.invalidate(a); // an older credential refused: the current one stays
    await src.get();
    expect(runs(p)).toBe(2);
    src.invalidate(c);
    await src.get();
    expect(runs(p)).toBe(3);
  });
});

describe('the apiserver client with an exec plugin', () => {
  it('sends the plugin token, and after a 401 asks the plugin again', async () => {
    // Each run prints the next token: tok-1, tok-2, …
    const p = plugin(
      'rotating',
      `n=$(wc -l < "$0.count"); echo "{\\"apiVersion\\":\\"${V1}\\",\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"tok-$n\\"}}"`,
    );
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.writeHead(req.headers.authorization === 'Bearer tok-1' ? 401 : 200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kubeconfig = join(dir, 'exec.kubeconfig');
    writeFileSync(
      kubeconfig,
      kubeconfigText(
        `{server: "http://127.0.0.1:${(server.address() as { port: number }).port}"}`,
        `{exec: {apiVersion: ${V1}, command: ./rotating, interactiveMode: IfAvailable}}`,
      ),
    );
    try {
      const client = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
      expect((await client.request({ path: '/api/v1/nodes' })).status).toBe(401);
      expect((await client.request({ path: '/api/v1/nodes' })).status).toBe(200);
      expect((await client.request({ path: '/api/v1/nodes' })).status).toBe(200);
      expect(seen).toEqual(['Bearer tok-1', 'Bearer tok-2', 'Bearer tok-2']);
      expect(runs(p)).toBe(2);
    } finally {
      server.close();
    }
  });

  it('leaves the plugin alone when the user has a static credential, as client-go', () => {
    const kubeconfig = join(dir, 'static.kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: c',
        'clusters: [{name: k, cluster: {server: "https://a"}}]',
        `users: [{name: u, user: {token: static, exec: {apiVersion: ${V1}, command: never-run, interactiveMode: Never}}}]`,
        'contexts: [{name: c, context: {cluster: k, user: u}}]',
      ].join('\n'),
    );
    const kc = loadKubeconfig(kubeconfig);
    expect(kc.exec).toBeUndefined();
    expect(kc.authorization()).toBe('Bearer static');
  });
});
