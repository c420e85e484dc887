/**
 * TLS bootstrap and client certificate rotation: the kubelet starts with only a bootstrap token,
 * requests its client certificate through the CSR API (signed here by the fake cluster's
 * approver/signer), writes the kubeconfig and the pem under --cert-dir, registers as
 * system:node:<node>, and with rotateCertificates renews the certificate before it expires —
 * the requests after that use the new certificate. A restart reuses the stored certificate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { csrSubject } from '../../src/lib/x509.js';
import { startCluster, type Cluster } from './cluster-helpers.js';
import { httpGet, until } from './helpers.js';

const node = 'boot-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-boot-'));
let c: Cluster;
const CSRS = 'certificates.k8s.io/certificatesigningrequests';

beforeAll(async () => {
  c = await startCluster({
    dir,
    node,
    bootstrap: { validSeconds: 10 },
    config: ['rotateCertificates: true', 'nodeStatusUpdateFrequency: 1s'],
    extra: ['--cert-dir', join(dir, 'certs')],
  });
}, 30_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('client certificate bootstrap', () => {
  it('requests a certificate with the bootstrap token, writes kubeconfig + pem, then acts as system:node:<node>', async () => {
    await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
    const [csr] = c.api.store.list(CSRS);
    expect(csr.spec).toMatchObject({
      signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
      usages: ['digital signature', 'client auth'],
      username: 'system:bootstrap:abcdef',
    });
    expect(await csrSubject(Buffer.from(csr.spec.request, 'base64').toString('utf8'))).toEqual({
      cn: `system:node:${node}`,
      o: ['system:nodes'],
    });
    const link = join(dir, 'certs', 'kubelet-client-current.pem');
    expect(readlinkSync(link)).toMatch(/kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/); // client-go certificate_store
    expect(statSync(readlinkSync(link)).mode & 0o777).toBe(0o600);
    expect(readFileSync(c.kubeconfig, 'utf8')).toContain(`client-certificate: ${link}`);
    const nodeCreate = c.api.requests.find((r) => r.method === 'POST' && r.path === '/api/v1/nodes')!;
    expect(nodeCreate.user).toBe(`system:node:${node}`);
  });

  it('rotates the certificate at 70–90 % of its lifetime; later requests use the new one', async () => {
    const first = c.api.requests.find((r) => r.user === `system:node:${node}`)!.certSerial;
    const second = await until(
      () => c.api.store.list(CSRS).find((x) => x.spec.username === `system:node:${node}` && x.status?.certificate),
      15_000,
      'rotation CSR signed',
    );
    expect(second.spec.groups).toContain('system:nodes');
    const newSerial = await until(
      () => {
        const r = c.api.requests.filter((x) => x.user === `system:node:${node}`).at(-1)!;
        return r.certSerial !== first && r.certSerial;
      },
      10_000,
      'requests with the new certificate',
    );
    expect(newSerial).not.toBe(first);
    expect(c.kubelet.output()).toContain('rotated the kubelet client certificate');
    // Upstream's client certificate manager metrics: seconds left on the current (10 s) certificate, no failed renewal.
    const text = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    const ttl = Number(/^kubelet_certificate_manager_client_ttl_seconds (\S+)$/m.exec(text)?.[1]);
    expect(ttl).toBeGreaterThanOrEqual(-1);
    expect(ttl).toBeLessThanOrEqual(10);
    expect(text).toMatch(/^kubelet_certificate_manager_client_expiration_renew_errors 0$/m);
  }, 30_000);

  it('a restart reuses the stored certificate (no new CSR)', async () => {
    const before = c.api.store.list(CSRS).length;
    await c.restartKubelet();
    const t = Date.now();
    await until(
      () => c.api.requests.some((r) => r.at > t && r.user === `system:node:${node}`),
      20_000,
      'requests after restart',
    );
    expect(c.api.store.list(CSRS).length).toBe(before);
    // Registration again: 409 AlreadyExists, then the existing Node is kept (same UID).
    const uid = c.api.store.get('nodes', '', node)!.metadata.uid;
    await until(
      () => c.api.requests.some((r) => r.at > t && r.method === 'GET' && r.path === `/api/v1/nodes/${node}`),
      20_000,
      'existing node read after 409',
    );
    expect(c.api.store.get('nodes', '', node)!.metadata.uid).toBe(uid);
  }, 30_000);
});

describe('a restart while the bootstrap CSR is pending', () => {
  it('reuses the pending key and CSR (node-csr-<digest>) instead of filing another; the certificate then arrives', async () => {
    const d = mkdtempSync(join(tmpdir(), 'tsk-boot-pending-'));
    const p = await startCluster({
      dir: d,
      node: 'pending-node',
      bootstrap: { validSeconds: 600, paused: true },
      extra: ['--cert-dir', join(d, 'certs')],
    });
    try {
      const csr = await until(() => p.api.store.list(CSRS)[0], 20_000, 'CSR filed');
      expect(csr.metadata.name).toMatch(/^node-csr-[A-Za-z0-9_-]{43}$/);
      expect(statSync(join(d, 'certs', 'kubelet-client.key.tmp')).mode & 0o777).toBe(0o600);
      p.kubelet.proc.kill('SIGKILL');
      await new Promise((r) => p.kubelet.proc.once('exit', r));
      await p.restartKubelet();
      await until(
        () =>
          p.api.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/certificatesigningrequests')).length >=
          2,
        20_000,
        'second start asked again',
      );
      expect(p.api.store.list(CSRS).map((x) => x.metadata.name)).toEqual([csr.metadata.name]);
      p.startSigning();
      await until(
        () => p.api.store.get('nodes', '', 'pending-node'),
        30_000,
        'node registered with the signed certificate',
      );
      expect(p.api.store.list(CSRS)).toHaveLength(1);
      expect(() => statSync(join(d, 'certs', 'kubelet-client.key.tmp'))).toThrow();
    } finally {
      await p.close();
      rmSync(d, { recursive: true, force: true });
    }
  }, 60_000);
});
