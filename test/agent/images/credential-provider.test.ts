/**
 * Image credential provider plugins: the config checked as upstream's validation does, the
 * plugin's answer, and real plugin scripts run by the provider set (matching, caching by image,
 * registry or globally, shared runs, failures).
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CredentialProviders, parseCredentialProviderResponse } from '../../../src/agent/images/credential-provider.js';
import {
  loadCredentialProviderConfig,
  parseCredentialProviderConfig,
} from '../../../src/agent/images/credential-provider-config.js';
import { keyMatches, serviceAccountOf } from '../../../src/agent/images/keyring.js';
import { serviceAccountSource } from '../../../src/agent/images/service-account-source.js';
import { createLogger } from '../../../src/lib/logger.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import { registerCredentialProviderMetrics } from '../../../src/agent/metrics/credential-provider-metrics.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { startFakeWithKubeconfig } from '../../fixtures/apiserver/server.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-credprov-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const V1 = 'credentialprovider.kubelet.k8s.io/v1';
const config = (providers: string) =>
  `apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n${providers}`;
const provider = (name: string, extra = '') =>
  `- name: ${name}\n  matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example.com/team"]\n  defaultCacheDuration: 10m\n  apiVersion: ${V1}\n${extra}`;

/** A plugin script answering `answer` (cacheKeyType, cacheDuration), counting its runs. */
function plugin(name: string, answer: Record<string, unknown>, o: { fail?: boolean; sleep?: number } = {}): string {
  const body = {
    kind: 'CredentialProviderResponse',
    apiVersion: V1,
    auth: { '*.dkr.ecr.*.amazonaws.com': { username: 'AWS', password: `pw-${name}` } },
    ...answer,
  };
  writeFileSync(
    join(dir, name),
    `#!/bin/sh\nread -r req\necho "$req $MARK" >> ${dir}/${name}.runs\n${o.sleep ? `sleep ${o.sleep}\n` : ''}${o.fail ? 'exit 3\n' : ''}echo '${JSON.stringify(body)}'\n`,
  );
  chmodSync(join(dir, name), 0o755);
  return name;
}
const runs = (name: string) => {
  try {
    return readFileSync(join(dir, `${name}.runs`), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
};
const logger = createLogger({ level: 'fatal' });
const ecr = (repo: string) => `123.dkr.ecr.eu-west-1.amazonaws.com/${repo}:1`;

describe('credential provider config', () => {
  it('reads the providers with their binary under the bin dir', () => {
    const [p] = parseCredentialProviderConfig(
      config(provider('ecr', '  args: [get-credentials]\n  env: [{name: AWS_PROFILE, value: temp}]\n')),
      '/bin/dir',
    );
    expect(p).toEqual({
      name: 'ecr',
      matchImages: ['*.dkr.ecr.*.amazonaws.com', 'registry.example.com/team'],
      defaultCacheMs: 600_000,
      apiVersion: V1,
      args: ['get-credentials'],
      env: [{ name: 'AWS_PROFILE', value: 'temp' }],
      command: '/bin/dir/ecr',
    });
  });
  it.each([
    ['apiVersion: v1\nkind: CredentialProviderConfig\nproviders: []', /unsupported apiVersion/],
    [
      'apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []',
      /at least 1 item in plugins is required/,
    ],
    [config(provider('a/b')), /provider name cannot contain '\/'/],
    [config(provider('a b')), /cannot contain spaces/],
    [config(provider('..')), /cannot be '.' or '..'/],
    [config(`${provider('x')}${provider('x')}`), /duplicate provider name "x"/],
    [
      config(`- name: x\n  matchImages: []\n  defaultCacheDuration: 1m\n  apiVersion: ${V1}\n`),
      /at least 1 item in matchImages is required/,
    ],
    [
      config(`- name: x\n  matchImages: [a]\n  apiVersion: ${V1}\n`),
      /defaultCacheDuration: a non-negative duration is required/,
    ],
    [
      config(
        `- name: x\n  matchImages: [a]\n  defaultCacheDuration: 1m\n  apiVersion: credentialprovider.kubelet.k8s.io/v2\n`,
      ),
      /apiVersion: supported values are/,
    ],
  ])('refuses %j', (text, re) => {
    expect(() => parseCredentialProviderConfig(text, '/b')).toThrow(re);
  });
  it('fails the start when a binary is missing, naming it', async () => {
    writeFileSync(join(dir, 'cfg.yaml'), config(provider('absent')));
    await expect(loadCredentialProviderConfig(join(dir, 'cfg.yaml'), dir)).rejects.toThrow(
      `error inspecting binary executable "${join(dir, 'absent')}"`,
    );
  });
  it("reads a directory's config files in name order as one config, and hashes what it read as upstream", async () => {
    const configs = join(dir, 'config.d');
    mkdirSync(configs);
    plugin('first', { cacheKeyType: 'Image' });
    plugin('second', { cacheKeyType: 'Image' });
    const b = config(provider('second'));
    const a = config(provider('first'));
    writeFileSync(join(configs, 'b.yml'), b);
    writeFileSync(join(configs, 'a.yaml'), a);
    writeFileSync(join(configs, 'notes.txt'), 'not a config');
    const loaded = await loadCredentialProviderConfig(configs, dir);
    expect(loaded.providers.map((p) => p.name)).toEqual(['first', 'second']);
    // sha256 over each file: its length as 8 bytes big-endian, then its bytes (upstream readCredentialProviderConfig).
    const lengthOf = (text: string) => {
      const n = Buffer.alloc(8);
      n.writeBigUInt64BE(BigInt(Buffer.byteLength(text)));
      return n;
    };
    const expected = createHash('sha256').update(lengthOf(a)).update(a).update(lengthOf(b)).update(b).digest('hex');
    expect(loaded.hash).toBe(`sha256:${expected}`);
    expect((await loadCredentialProviderConfig(join(configs, 'a.yaml'), dir)).hash).toBe(
      `sha256:${createHash('sha256').update(lengthOf(a)).update(a).digest('hex')}`,
    );
    writeFileSync(join(configs, 'c.json'), JSON.stringify(parseYaml(a)));
    await expect(loadCredentialProviderConfig(configs, dir)).rejects.toThrow(
      'duplicate provider name "first" found in configuration file(s)',
    );
    const empty = join(dir, 'empty.d');
    mkdirSync(empty);
    await expect(loadCredentialProviderConfig(empty, dir)).rejects.toThrow(
      `no configuration files found in directory "${empty}"`,
    );
  });

  it('reports the hash of the config in use (kubelet_credential_provider_config_info)', async () => {
    writeFileSync(join(dir, 'info.yaml'), config(provider('info')));
    plugin('info', { cacheKeyType: 'Image' });
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    await CredentialProviders.fromFiles(join(dir, 'info.yaml'), dir, {
      logger,
      metrics: registerCredentialProviderMetrics(metrics),
    });
    const { hash } = await loadCredentialProviderConfig(join(dir, 'info.yaml'), dir);
    expect(metrics.text()).toContain(`kubelet_credential_provider_config_info{hash="${hash}"} 1`);
  });

  it('matches images as upstream: a glob per host label, a path prefix', () => {
    expect(keyMatches('*.dkr.ecr.*.amazonaws.com', ecr('app'))).toBe(true);
    expect(keyMatches('*.dkr.ecr.*.amazonaws.com', 'dkr.ecr.eu-west-1.amazonaws.com/app')).toBe(false);
    expect(keyMatches('registry.example.com/team', 'registry.example.com/team/app:1')).toBe(true);
    expect(keyMatches('registry.example.com/team', 'registry.example.com/teamx/app:1')).toBe(false);
  });
});

describe('credential provider answers', () => {
  it('checks kind, apiVersion and cacheKeyType', () => {
    const ok = {
      kind: 'CredentialProviderResponse',
      apiVersion: V1,
      cacheKeyType: 'Registry',
      cacheDuration: '1h',
      auth: { 'r.io': { username: 'u', password: 'p' } },
    };
    expect(parseCredentialProviderResponse(JSON.stringify(ok), V1)).toMatchObject({
      cacheKeyType: 'Registry',
      cacheMs: 3_600_000,
      entries: [{ host: 'r.io' }],
    });
    expect(() => parseCredentialProviderResponse(JSON.stringify({ ...ok, apiVersion: 'x' }), V1)).toThrow(
      /configured to use/,
    );
    expect(() => parseCredentialProviderResponse(JSON.stringify({ ...ok, cacheKeyType: 'Pod' }), V1)).toThrow(
      /invalid cacheKeyType/,
    );
    expect(() => parseCredentialProviderResponse('nope', V1)).toThrow(/not JSON/);
  });
});

describe('credential providers', () => {
  const load = async (name: string) => {
    writeFileSync(join(dir, `${name}.yaml`), config(provider(name)));
    return (await loadCredentialProviderConfig(join(dir, `${name}.yaml`), dir)).providers;
  };
  it('runs the plugin for a matching image only; a Registry answer serves the registry until it expires', async () => {
    plugin('reg', { cacheKeyType: 'Registry', cacheDuration: '1h' });
    let now = 1_000_000;
    const set = new CredentialProviders(await load('reg'), { logger, now: () => now });
    expect(await set.credentialsFor('docker.io/library/busybox:1')).toEqual([]);
    expect(runs('reg')).toHaveLength(0);
    // Concurrent lookups in one registry: one run.
    const [a, b] = await Promise.all([set.credentialsFor(ecr('a')), set.credentialsFor(ecr('b'))]);
    expect(a).toEqual([expect.objectContaining({ username: 'AWS', password: 'pw-reg' })]);
    expect(b).toEqual(a);
    expect(runs('reg')).toHaveLength(1);
    expect(JSON.parse(runs('reg')[0])).toEqual({
      apiVersion: V1,
      kind: 'CredentialProviderRequest',
      image: expect.stringMatching(/\/(a|b):1$/),
    });
    now += 3_600_001;
    await set.credentialsFor(ecr('c'));
    expect(runs('reg')).toHaveLength(2);
  });
  it('an Image answer serves that image only; no cacheDuration means the default; 0 means no cache', async () => {
    plugin('img', { cacheKeyType: 'Image' });
    let now = 1_000_000;
    const set = new CredentialProviders(await load('img'), { logger, now: () => now });
    await set.credentialsFor(ecr('a'));
    await set.credentialsFor(ecr('a'));
    await set.credentialsFor(ecr('b'));
    expect(runs('img')).toHaveLength(2);
    now += 600_001; // the provider's defaultCacheDuration
    await set.credentialsFor(ecr('a'));
    expect(runs('img')).toHaveLength(3);
    plugin('nocache', { cacheKeyType: 'Global', cacheDuration: '0s' });
    const set2 = new CredentialProviders(await load('nocache'), { logger, now: () => now });
    await set2.credentialsFor(ecr('a'));
    await set2.credentialsFor(ecr('b'));
    expect(runs('nocache')).toHaveLength(2);
  });
  it('a failing plugin gives no credentials (the pull goes on without them)', async () => {
    plugin('broken', { cacheKeyType: 'Global' }, { fail: true });
    const set = new CredentialProviders(await load('broken'), { logger });
    expect(await set.credentialsFor(ecr('a'))).toEqual([]);
    expect(runs('broken')).toHaveLength(1);
  });
  it("counts each run and each failure in upstream's metrics", async () => {
    plugin('counted', { cacheKeyType: 'Image', cacheDuration: '0s' });
    plugin('failing', { cacheKeyType: 'Global' }, { fail: true });
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    const plugins = registerCredentialProviderMetrics(metrics);
    const counted = new CredentialProviders(await load('counted'), { logger, metrics: plugins });
    const failing = new CredentialProviders(await load('failing'), { logger, metrics: plugins });
    await counted.credentialsFor(ecr('a'));
    await counted.credentialsFor(ecr('a'));
    await failing.credentialsFor(ecr('a'));
    const text = metrics.text();
    expect(text).toMatch(/^kubelet_credential_provider_plugin_duration_count\{plugin_name="counted"\} 2$/m);
    expect(text).toMatch(/^kubelet_credential_provider_plugin_errors_total\{plugin_name="failing"\} 1$/m);
    expect(text).not.toMatch(/^kubelet_credential_provider_plugin_errors_total\{plugin_name="counted"\}/m);
  });
});

describe('credential providers with tokenAttributes (the pod’s service account token)', () => {
  const withToken = (name: string, attributes: string, apiVersion = V1) =>
    `- name: ${name}\n  matchImages: ["*.dkr.ecr.*.amazonaws.com"]\n  defaultCacheDuration: 10m\n  apiVersion: ${apiVersion}\n  tokenAttributes:\n${attributes}`;
  const attrs = (o: Record<string, string>) =>
    Object.entries(o)
      .map(([k, v]) => `    ${k}: ${v}\n`)
      .join('');

  it('checks tokenAttributes as upstream does', () => {
    const parse =
      (attributes: Record<string, string>, apiVersion = V1) =>
      () =>
        parseCredentialProviderConfig(config(withToken('p', attrs(attributes), apiVersion)), dir);
    const ok = {
      serviceAccountTokenAudience: 'sts.amazonaws.com',
      requireServiceAccount: 'true',
      cacheType: 'ServiceAccount',
    };
    expect(parse(ok)()[0].tokenAttributes).toEqual({
      audience: 'sts.amazonaws.com',
      requireServiceAccount: true,
      requiredAnnotationKeys: [],
      optionalAnnotationKeys: [],
      cacheType: 'ServiceAccount',
    });
    expect(parse({ ...ok, serviceAccountTokenAudience: '""' })).toThrow(
      'providers[0].tokenAttributes.serviceAccountTokenAudience: serviceAccountTokenAudience is required',
    );
    expect(parse({ serviceAccountTokenAudience: 'a', cacheType: 'Token' })).toThrow(
      'providers[0].tokenAttributes.requireServiceAccount: requireServiceAccount is required',
    );
    expect(parse(ok, 'credentialprovider.kubelet.k8s.io/v1beta1')).toThrow(
      'providers[0].tokenAttributes: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version',
    );
    expect(parse({ ...ok, cacheType: '""' })).toThrow(
      'providers[0].tokenAttributes.cacheType: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token',
    );
    expect(parse({ ...ok, requireServiceAccount: 'false', requiredServiceAccountAnnotationKeys: '[a.io/x]' })).toThrow(
      'providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set',
    );
    expect(
      parse({
        ...ok,
        requiredServiceAccountAnnotationKeys: '[a.io/x]',
        optionalServiceAccountAnnotationKeys: '[a.io/x]',
      }),
    ).toThrow('providers[0].tokenAttributes: ["a.io/x"]: annotation keys cannot be both required and optional');
  });

  it("runs the plugin with a token of the pod's service account bound to the pod and its annotations; caches per service account", async () => {
    const f = await startFakeWithKubeconfig(dir, { user: 'system:node:n1' });
    try {
      const client = await createKubeClient(f.kubeconfig, { timeoutMs: 5000 });
      f.api.store.create('serviceaccounts', {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: {
          name: 'puller',
          namespace: 'team',
          annotations: { 'eks.amazonaws.com/role-arn': 'arn:role', other: 'x' },
        },
      });
      f.api.store.create('serviceaccounts', {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'plain', namespace: 'team' },
      });
      plugin('satoken', { cacheKeyType: 'Registry', cacheDuration: '1h' });
      writeFileSync(
        join(dir, 'satoken.yaml'),
        config(
          withToken(
            'satoken',
            attrs({
              serviceAccountTokenAudience: 'sts.amazonaws.com',
              requireServiceAccount: 'true',
              requiredServiceAccountAnnotationKeys: '[eks.amazonaws.com/role-arn]',
              cacheType: 'ServiceAccount',
            }),
          ),
        ),
      );
      const set = new CredentialProviders(
        (await loadCredentialProviderConfig(join(dir, 'satoken.yaml'), dir)).providers,
        {
          logger,
          serviceAccounts: serviceAccountSource(client, new FakeClock(Date.now())),
        },
      );
      // Pods bound to the node: NodeRestriction gives a node tokens bound to its own pods only.
      const pod = (name: string, serviceAccountName?: string) => {
        const stored = f.api.store.create('pods', {
          metadata: { name, namespace: 'team' },
          spec: { nodeName: 'n1', serviceAccountName, containers: [{ name: 'c', image: ecr('a') }] },
        });
        return { namespace: 'team', name, uid: stored.metadata.uid as string, serviceAccountName };
      };
      const p1 = pod('p1', 'puller');
      const got = await set.credentialsFor(ecr('a'), p1);
      expect(got).toEqual([expect.objectContaining({ username: 'AWS', password: 'pw-satoken' })]);
      // The pull records name the service account these came through.
      const puller = f.api.store.get('serviceaccounts', 'team', 'puller')!;
      expect(serviceAccountOf(got[0])).toEqual({ uid: puller.metadata.uid, namespace: 'team', name: 'puller' });
      const request = JSON.parse(runs('satoken')[0]);
      expect(request).toEqual({
        apiVersion: V1,
        kind: 'CredentialProviderRequest',
        image: ecr('a'),
        serviceAccountToken: f.api.issuedTokens.at(-1)!.token,
        serviceAccountAnnotations: { 'eks.amazonaws.com/role-arn': 'arn:role' },
      });
      expect(f.api.issuedTokens.at(-1)).toMatchObject({
        audiences: ['sts.amazonaws.com'],
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'p1', uid: p1.uid },
      });
      // Another pod of the same service account: the cached answer (cacheType ServiceAccount).
      await set.credentialsFor(ecr('b'), pod('p2', 'puller'));
      expect(runs('satoken')).toHaveLength(1);
      // A service account without the required annotation, or a pod without one: nothing from this provider.
      expect(await set.credentialsFor(ecr('a'), pod('p3', 'plain'))).toEqual([]);
      expect(await set.credentialsFor(ecr('a'), pod('p4'))).toEqual([]);
      expect(runs('satoken')).toHaveLength(1);
    } finally {
      await f.api.close();
    }
  });
});
