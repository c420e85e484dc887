/**
 * ClusterTrustBundles for projected volumes, against the fake apiserver over HTTPS: discovery picks the version
 * served, a watch keeps the bundles, and the certificates come out deduplicated as CERTIFICATE blocks, by name or by
 * signer and label selector, with upstream's errors.
 */
import { X509Certificate } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterTrustBundles, normalizeTrustAnchors } from '../../../src/agent/objects/cluster-trust-bundles.js';
import { realClock } from '../../../src/lib/clock.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { createLogger } from '../../../src/lib/logger.js';
import { createCertificate, newKeyPem } from '../../../src/lib/x509.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';

const logger = createLogger({ level: 'fatal' });
const fake = useFakeApiserver();
const stops: AbortController[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop.abort();
  fake.api.inject(() => undefined);
  for (const b of fake.api.store.list('certificates.k8s.io/clustertrustbundles'))
    fake.api.store.remove('certificates.k8s.io/clustertrustbundles', '', b.metadata.name);
});

async function rootCertificate(commonName: string): Promise<string> {
  const now = Date.now();
  return createCertificate({
    subject: { cn: commonName },
    key: { privateKeyPem: await newKeyPem() },
    usage: 'ca',
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3_600_000),
  });
}

function bundle(name: string, trustBundle: string, o: { signerName?: string; labels?: Record<string, string> } = {}) {
  fake.api.store.create('certificates.k8s.io/clustertrustbundles', {
    metadata: { name, ...(o.labels ? { labels: o.labels } : {}) },
    spec: { trustBundle, ...(o.signerName ? { signerName: o.signerName } : {}) },
  });
}

async function started(): Promise<ClusterTrustBundles> {
  const client = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
  const bundles = new ClusterTrustBundles({ client, clock: realClock, logger });
  const stop = new AbortController();
  stops.push(stop);
  bundles.start(stop.signal);
  return bundles;
}

/** The subjects of the certificates of a PEM file, in order. */
const subjects = (pem: string) =>
  [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g)].map(
    ([block]) => new X509Certificate(block).subject,
  );

describe('ClusterTrustBundles', () => {
  it('reads a bundle by name from the version discovery finds, as plain CERTIFICATE blocks, each once', async () => {
    const [a, b] = await Promise.all([rootCertificate('root-a'), rootCertificate('root-b')]);
    // Headers, text between blocks and a repeated certificate, which the apiserver would refuse but a reader skips.
    const withHeaders = a.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nComment: x\n\n');
    bundle('by-name', `${withHeaders}some text\n${b}${a}`);
    const bundles = await started();
    const pem = await bundles.byName('by-name', false);
    expect(subjects(pem).sort()).toEqual(['CN=root-a', 'CN=root-b']);
    expect(pem).not.toContain('Comment');
    expect(pem).not.toContain('some text');
    // The same set reads the same while the kubelet runs (no rewrite of the volume on every sync).
    expect(await bundles.byName('by-name', false)).toBe(pem);
    expect(fake.api.requests.some((r) => r.path === '/apis/certificates.k8s.io/v1beta1/clustertrustbundles')).toBe(
      true,
    );
  });

  it("a missing bundle is upstream's error, or an empty file when optional", async () => {
    const bundles = await started();
    await expect(bundles.byName('absent', false)).rejects.toThrow(
      'while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "absent" not found',
    );
    expect(await bundles.byName('absent', true)).toBe('');
  });

  it("by signer: the signer's bundles the selector picks (none without one, all with an empty one)", async () => {
    const [a, b, other] = await Promise.all([
      rootCertificate('signer-a'),
      rootCertificate('signer-b'),
      rootCertificate('other-signer'),
    ]);
    bundle('example.com:s:1', a, { signerName: 'example.com/s', labels: { pick: 'yes' } });
    bundle('example.com:s:2', `${b}${a}`, { signerName: 'example.com/s', labels: { pick: 'no' } });
    bundle('example.com:t:1', other, { signerName: 'example.com/t', labels: { pick: 'yes' } });
    const bundles = await started();
    await expect(bundles.bySigner('example.com/s', undefined, false)).rejects.toThrow(
      'combination of signerName and labelSelector matched zero ClusterTrustBundles',
    );
    expect(await bundles.bySigner('example.com/s', null, true)).toBe('');
    expect(subjects(await bundles.bySigner('example.com/s', {}, false)).sort()).toEqual(['CN=signer-a', 'CN=signer-b']);
    expect(subjects(await bundles.bySigner('example.com/s', { matchLabels: { pick: 'yes' } }, false))).toEqual([
      'CN=signer-a',
    ]);
    const notIn = { matchExpressions: [{ key: 'pick', operator: 'NotIn', values: ['yes'] }] };
    expect(subjects(await bundles.bySigner('example.com/s', notIn, false)).sort()).toEqual([
      'CN=signer-a',
      'CN=signer-b',
    ]);
    await expect(
      bundles.bySigner('example.com/s', { matchExpressions: [{ key: 'pick', operator: 'Near' }] }, false),
    ).rejects.toThrow('while parsing label selector: "Near" is not a valid label selector operator');
  });

  it('follows changes through its watch', async () => {
    const [a, b] = await Promise.all([rootCertificate('before'), rootCertificate('after')]);
    bundle('rotating', a);
    const bundles = await started();
    expect(subjects(await bundles.byName('rotating', false))).toEqual(['CN=before']);
    const current = fake.api.store.get('certificates.k8s.io/clustertrustbundles', '', 'rotating')!;
    fake.api.store.update('certificates.k8s.io/clustertrustbundles', { ...current, spec: { trustBundle: b } });
    await until(async () => subjects(await bundles.byName('rotating', false))[0] === 'CN=after', 10_000, 'the update');
  });

  it('without any version of the API, the projection fails as in static mode', async () => {
    fake.api.inject(({ path }) =>
      path.startsWith('/apis/certificates.k8s.io/') ? { code: 404, reason: 'NotFound' } : undefined,
    );
    const bundles = await started();
    await expect(bundles.byName('any', true)).rejects.toThrow(
      'ClusterTrustBundle projection is not supported in static kubelet mode',
    );
  });

  it('a discovery that fails is asked again on the next use', async () => {
    const root = await rootCertificate('later');
    bundle('later', root);
    fake.api.inject(({ path }) =>
      path === '/apis/certificates.k8s.io/v1' ? { code: 503, reason: 'ServiceUnavailable' } : undefined,
    );
    const bundles = await started();
    await expect(bundles.byName('later', false)).rejects.toThrow(
      'failed to ensure informer manager for ClusterTrustBundles: failed to determine which informer manager to choose',
    );
    fake.api.inject(() => undefined);
    expect(subjects(await bundles.byName('later', false))).toEqual(['CN=later']);
  });
});

describe('normalizeTrustAnchors', () => {
  it('orders by the salt: the same set in any order gives one file per salt', async () => {
    const roots = await Promise.all(['r1', 'r2', 'r3', 'r4'].map(rootCertificate));
    const salt = Buffer.from('salt');
    const one = normalizeTrustAnchors([roots.join('')], salt);
    expect(normalizeTrustAnchors([...roots].reverse(), salt)).toBe(one);
    expect(subjects(one).sort()).toEqual(['CN=r1', 'CN=r2', 'CN=r3', 'CN=r4']);
    // Other salts (other kubelet runs) order it otherwise at least once.
    const orders = new Set(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((s) => subjects(normalizeTrustAnchors(roots, Buffer.from(s))).join()),
    );
    expect(orders.size).toBeGreaterThan(1);
  });
});
