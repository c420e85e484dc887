/**
 * Native X.509: certificates chain to their CA (checked with node:crypto's own parser), carry the
 * usages and SANs asked for, CSRs carry the subject and verify, a re-signed CSR for the same key
 * is recognised as compatible (ECDSA signatures differ each time) and another key's is not.
 */
import { describe, expect, it } from 'vitest';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import {
  compatibleCsr,
  kubeletClientUsages,
  kubeletServingUsages,
  nodeCsr,
  KUBELET_CLIENT_SIGNER,
} from '../../src/agent/certificate/csr.js';
import { createCa, issueCert } from '../../src/server/pki.js';
import { certValidity, createCertificate, csrInfo, csrSubject } from '../../src/lib/x509.js';
import { execFileSync } from 'node:child_process';

describe('x509', () => {
  it('issues EC P-256 certificates that chain to their CA with the asked usages and SANs', async () => {
    const ca = await createCa('unit-ca');
    const leaf = await issueCert(ca, {
      cn: 'node-1',
      server: true,
      sans: { dns: ['node-1', 'localhost'], ips: ['127.0.0.1', '::1'] },
    });
    const caX = new X509Certificate(ca.cert);
    const x = new X509Certificate(leaf.cert);
    expect(caX.ca).toBe(true);
    expect(x.ca).toBe(false);
    expect(x.checkIssued(caX)).toBe(true);
    expect(x.verify(caX.publicKey)).toBe(true);
    expect(x.subject).toBe('CN=node-1');
    expect(x.subjectAltName).toBe('DNS:node-1, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(createPrivateKey(leaf.key).asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(x.checkPrivateKey(createPrivateKey(leaf.key))).toBe(true);
    const client = await issueCert(ca, { cn: 'admin', org: 'system:masters', expired: true });
    const cx = new X509Certificate(client.cert);
    expect(cx.subject).toBe('CN=admin\nO=system:masters');
    expect(cx.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(certValidity(client.cert)!.notAfter).toBeLessThan(Date.now());
    expect(certValidity('not a certificate')).toBeUndefined();
  });

  it('signs with an existing RSA CA key too', async () => {
    const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    const cert = await createCertificate({
      subject: { cn: 'rsa-ca' },
      key: { privateKeyPem: key },
      usage: 'ca',
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    const leaf = await issueCert({ cert, key }, { cn: 'x' });
    expect(new X509Certificate(leaf.cert).verify(new X509Certificate(cert).publicKey)).toBe(true);
  });

  it('builds the node CSR, and recognises a pending one for the same key and request', async () => {
    const { keyPem, csrPem } = await nodeCsr('n1');
    expect(await csrSubject(csrPem)).toEqual({ cn: 'system:node:n1', o: ['system:nodes'] });
    const usages = kubeletClientUsages(keyPem);
    expect(usages).toEqual(['digital signature', 'client auth']);
    const again = await nodeCsr('n1', keyPem);
    expect(again.csrPem).not.toBe(csrPem);
    const existing = {
      spec: { request: Buffer.from(csrPem).toString('base64'), signerName: KUBELET_CLIENT_SIGNER, usages },
    };
    expect(await compatibleCsr(existing, { csrPem: again.csrPem, usages })).toBe(true);
    expect(await compatibleCsr(existing, { csrPem: (await nodeCsr('n1')).csrPem, usages })).toBe(false);
    expect(await compatibleCsr(existing, { csrPem: (await nodeCsr('n2', keyPem)).csrPem, usages })).toBe(false);
    expect(
      await compatibleCsr({ spec: { ...existing.spec, signerName: 'other' } }, { csrPem: again.csrPem, usages }),
    ).toBe(false);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    expect(kubeletClientUsages(rsa)).toEqual(['digital signature', 'key encipherment', 'client auth']);
  });

  it('puts SANs in a serving CSR as an extension request that OpenSSL reads and verifies', async () => {
    const { keyPem, csrPem } = await nodeCsr('n1', undefined, {
      dns: ['n1', 'n1.example'],
      ips: ['10.0.0.7', 'fd00::1'],
    });
    expect((await csrInfo(csrPem)).sans).toEqual({
      dns: ['n1', 'n1.example'],
      ips: ['10.0.0.7', 'fd00:0:0:0:0:0:0:1'],
    });
    expect((await csrInfo((await nodeCsr('n1')).csrPem)).sans).toBeUndefined();
    const text = execFileSync('openssl', ['req', '-noout', '-text', '-verify'], {
      input: csrPem,
      stdio: ['pipe', 'pipe', 'pipe'],
    }).toString();
    expect(text).toContain('DNS:n1, DNS:n1.example, IP Address:10.0.0.7, IP Address:FD00:0:0:0:0:0:0:1');
    expect(kubeletServingUsages(keyPem)).toEqual(['digital signature', 'server auth']);
  });
});
