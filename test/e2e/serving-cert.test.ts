/**
 * serverTLSBootstrap on a kubelet joining the fake apiserver: the kubelet files a
 * `kubernetes.io/kubelet-serving` CSR for its node with its hostname and IP as SANs; nothing
 * approves it by default, and until it is approved and signed the secure port is closed; once
 * the cluster signs it, 10250 serves that certificate (it verifies against the cluster CA for the
 * node IP); a restarted kubelet serves the stored certificate at once and files no new CSR; a
 * short-lived certificate is requested again before it expires and 10250 switches to the new one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type Cluster } from './cluster-helpers.js';
import { acceptsConnections, httpGet, until } from './helpers.js';
import { csrInfo } from '../../src/lib/x509.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-serving-'));
const node = 'serving-node';
const RESOURCE = 'certificates.k8s.io/certificatesigningrequests';
let c: Cluster;
const servingCsrs = (cl = c) =>
  cl.api.store.list(RESOURCE).filter((x) => x.spec?.signerName === 'kubernetes.io/kubelet-serving');
/** Approves a CSR as `kubectl certificate approve` does. */
function approve(cl: Cluster, csr: ReturnType<typeof servingCsrs>[number]): void {
  csr.status = {
    conditions: [
      {
        type: 'Approved',
        status: 'True',
        reason: 'KubectlApprove',
        message: 'This CSR was approved by kubectl certificate approve.',
      },
    ],
  };
  cl.api.store.update(RESOURCE, csr);
}

/** One unlabelled series of the read-only port's /metrics, as written. */
async function metric(cl: Cluster, name: string): Promise<string | undefined> {
  const text = (await httpGet(`http://127.0.0.1:${cl.ports.ro}/metrics`)).body;
  return new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
}

/** The certificate 10250 presents, verified against the cluster CA for 127.0.0.1. */
function servedCert(cl = c): Promise<tls.PeerCertificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: cl.ports.port, ca: cl.ca.cert, rejectUnauthorized: true }, () => {
      resolve(s.getPeerCertificate());
      s.destroy();
    });
    s.on('error', reject);
  });
}

beforeAll(async () => {
  c = await startCluster({ dir, node, bootstrap: { validSeconds: 3600 }, config: ['serverTLSBootstrap: true'] });
}, 30_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('serverTLSBootstrap', () => {
  it('requests a serving certificate for the node, and opens 10250 with it once the CSR is approved and signed', async () => {
    const [csr] = await until(() => (servingCsrs().length ? servingCsrs() : undefined), 20_000, 'a serving CSR');
    expect(csr.spec.usages).toEqual(['digital signature', 'server auth']);
    const info = await csrInfo(Buffer.from(csr.spec.request, 'base64').toString('utf8'));
    expect(info.subject).toEqual({ cn: `system:node:${node}`, o: ['system:nodes'] });
    expect(info.sans).toEqual({ dns: [node], ips: ['127.0.0.1'] });
    // Pending: the node is up (its read-only port serves) but the secure port is not open.
    await until(() => acceptsConnections(c.ports.ro), 20_000, 'read-only port');
    expect(await acceptsConnections(c.ports.port)).toBe(false);
    // Upstream's certificate manager metrics: no certificate yet is a TTL of +Inf.
    expect(await metric(c, 'kubelet_certificate_manager_server_ttl_seconds')).toBe('+Inf');
    expect(await metric(c, 'kubelet_server_expiration_renew_errors')).toBe('0');
    expect(await metric(c, 'kubelet_certificate_manager_server_rotation_seconds_count')).toBe('0');
    csr.status = {
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'KubectlApprove',
          message: 'This CSR was approved by kubectl certificate approve.',
        },
      ],
    };
    c.api.store.update(RESOURCE, csr);
    const cert = await until(() => servedCert().catch(() => undefined), 20_000, '10250 serving the signed certificate');
    expect(cert.subject.CN).toBe(`system:node:${node}`);
    expect(cert.issuer.CN).toBe('test-cluster-ca');
    expect(cert.subjectaltname).toContain('IP Address:127.0.0.1');
    // The TTL is now the signed certificate's: seconds until its notAfter (the fake cluster signs for an hour).
    const ttl = Number(
      await until(
        async () =>
          (await metric(c, 'kubelet_certificate_manager_server_ttl_seconds')) !== '+Inf'
            ? metric(c, 'kubelet_certificate_manager_server_ttl_seconds')
            : undefined,
        10_000,
        'a finite TTL',
      ),
    );
    expect(Math.abs(ttl - Math.trunc((Date.parse(cert.valid_to) - Date.now()) / 1000))).toBeLessThanOrEqual(5);
  }, 60_000);

  it('a restarted kubelet serves the stored certificate at once and files no new CSR', async () => {
    const before = (await servedCert()).fingerprint256;
    await c.restartKubelet();
    const cert = await until(() => servedCert().catch(() => undefined), 20_000, '10250 after restart');
    expect(cert.fingerprint256).toBe(before);
    expect(servingCsrs()).toHaveLength(1);
  }, 60_000);

  it('requests a new certificate before the current one expires, and 10250 switches to it', async () => {
    const rdir = mkdtempSync(join(tmpdir(), 'tsk-serving-rot-'));
    const r = await startCluster({
      dir: rdir,
      node,
      bootstrap: { validSeconds: 3600, servingValidSeconds: 8 },
      config: ['serverTLSBootstrap: true'],
    });
    try {
      const first = await until(() => servingCsrs(r)[0], 20_000, 'a serving CSR');
      approve(r, first);
      const a = await until(() => servedCert(r).catch(() => undefined), 20_000, 'the first certificate');
      // Rotation at 70-90 % of its 9 s (notBefore is 1 s back): a second CSR, approved, then served.
      const second = await until(
        () => servingCsrs(r).find((x) => x.metadata.name !== first.metadata.name),
        20_000,
        'a second serving CSR',
      );
      approve(r, second);
      const b = await until(
        async () => {
          const cert = await servedCert(r).catch(() => undefined);
          return cert && cert.fingerprint256 !== a.fingerprint256 ? cert : undefined;
        },
        20_000,
        '10250 serving the rotated certificate',
      );
      expect(Date.parse(b.valid_to)).toBeGreaterThan(Date.parse(a.valid_to));
      // The first certificate lived ~6–9 s before it was replaced: one observation, in the 1-minute bucket.
      expect(await metric(r, 'kubelet_certificate_manager_server_rotation_seconds_count')).toBe('1');
      expect(Number(await metric(r, 'kubelet_certificate_manager_server_rotation_seconds_sum'))).toBeLessThan(60);
    } finally {
      await r.close();
      rmSync(rdir, { recursive: true, force: true });
    }
  }, 60_000);
});
