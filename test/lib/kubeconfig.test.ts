import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadKubeconfig } from '../../src/lib/kubeconfig.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Writes a kubeconfig whose current context is `c` (cluster k, user u) with the given bodies. */
function write(cluster: string, user: string, extra = ''): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-kubeconfig-'));
  dirs.push(dir);
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: c',
      `clusters: [{name: other, cluster: {server: "https://wrong:1"}}, {name: k, cluster: ${cluster}}]`,
      `users: [{name: other, user: {token: wrong}}, {name: u, user: ${user}}]`,
      'contexts: [{name: other, context: {cluster: other, user: other}}, {name: c, context: {cluster: k, user: u}}]',
      extra,
    ].join('\n'),
  );
  return { dir, path };
}
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('loadKubeconfig', () => {
  it("reads the current context's cluster and user: inline data, a bearer token", () => {
    const { path } = write(
      `{server: "https://10.0.0.1:6443", certificate-authority-data: ${b64('CA')}, tls-server-name: api}`,
      '{token: t0k3n}',
    );
    const kc = loadKubeconfig(path);
    expect(kc.server.href).toBe('https://10.0.0.1:6443/');
    expect(kc.tls).toMatchObject({ ca: Buffer.from('CA'), rejectUnauthorized: true, servername: 'api' });
    expect(kc.tls.cert).toBeUndefined();
    expect(kc.authorization()).toBe('Bearer t0k3n');
  });

  it('resolves file paths against the kubeconfig directory; client certificate and key go together', () => {
    const { dir, path } = write(
      '{server: "https://a:6443", certificate-authority: pki/ca.crt, insecure-skip-tls-verify: true}',
      `{client-certificate: pki/c.pem, client-key: ${join('pki', 'c.pem')}}`,
    );
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'pki', 'ca.crt'), 'CAFILE');
    writeFileSync(join(dir, 'pki', 'c.pem'), 'CERT+KEY');
    const kc = loadKubeconfig(path);
    expect([kc.tls.ca?.toString(), kc.tls.cert?.toString(), kc.tls.key?.toString(), kc.tls.rejectUnauthorized]).toEqual(
      ['CAFILE', 'CERT+KEY', 'CERT+KEY', false],
    );
    expect(kc.authorization()).toBeUndefined();
    const half = write('{server: "https://a:6443"}', `{client-certificate-data: ${b64('C')}}`);
    expect(() => loadKubeconfig(half.path)).toThrow(/must be given together/);
  });

  it('re-reads a token file at most once a minute', () => {
    const { dir, path } = write('{server: "http://127.0.0.1:8080"}', '{tokenFile: token}');
    writeFileSync(join(dir, 'token'), 'first\n');
    let now = 0;
    const kc = loadKubeconfig(path, () => now);
    expect(kc.authorization()).toBe('Bearer first');
    writeFileSync(join(dir, 'token'), 'second');
    now = 59_999;
    expect(kc.authorization()).toBe('Bearer first');
    now = 60_000;
    expect(kc.authorization()).toBe('Bearer second');
  });

  it('basic auth from username and password', () => {
    const { path } = write('{server: "https://a"}', '{username: admin, password: s3cret}');
    expect(loadKubeconfig(path).authorization()).toBe(`Basic ${b64('admin:s3cret')}`);
  });

  it('says what is wrong, naming the file but never a credential', () => {
    const noCtx = write('{server: "https://a"}', '{token: x}');
    writeFileSync(noCtx.path, 'apiVersion: v1\nkind: Config\ncurrent-context: nope\ncontexts: []\n');
    expect(() => loadKubeconfig(noCtx.path)).toThrow(`kubeconfig ${noCtx.path}: context "nope" not found`);
    expect(() => loadKubeconfig(write('{insecure-skip-tls-verify: true}', '{token: x}').path)).toThrow(
      /no cluster server/,
    );
    expect(() => loadKubeconfig(write('{server: "https://a"}', '{auth-provider: {name: gcp}}').path)).toThrow(
      /auth providers are not supported/,
    );
    expect(() => loadKubeconfig(write('{server: "https://a"}', '{exec: {command: aws}}').path)).toThrow(
      /exec plugin: apiVersion must be one of/,
    );
    const missing = write('{server: "https://a"}', '{tokenFile: /nonexistent/secret-token-path}');
    expect(() => loadKubeconfig(missing.path)).toThrow(/ENOENT reading \/nonexistent\/secret-token-path/);
    const bad = write('{server: "https://a"}', '{token: SUPERSECRET}');
    writeFileSync(bad.path, 'token: SUPERSECRET\n: : [');
    let message = '';
    try {
      loadKubeconfig(bad.path);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^kubeconfig /);
    expect(message).not.toContain('SUPERSECRET');
    expect(() => loadKubeconfig(join(noCtx.dir, 'absent'))).toThrow(/ENOENT/);
  });
});
