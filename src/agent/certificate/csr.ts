/**
 * The kubelet client certificate's pure parts (upstream pkg/kubelet/certificate): the CSR
 * (`CN=system:node:<node>`, `O=system:nodes`, RSA 2048, SHA-256) as the CSR API expects it,
 * the CertificateSigningRequest object (signer `kubernetes.io/kube-apiserver-client-kubelet`),
 * the validity of a PEM certificate, and the rotation deadline (a jittered 70–90 % of the
 * lifetime, as upstream's certificate manager).
 */
import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';

/** The signer the kubelet's client certificates come from. */
export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';

/** A new private key (PKCS#8 PEM) and a CSR for the node (PEM). */
export function nodeCsr(nodeName: string, keyPem?: string): { keyPem: string; csrPem: string } {
  const key = keyPem ?? generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;
  const priv = forge.pki.privateKeyFromPem(key) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(priv.n, priv.e);
  csr.setSubject([{ name: 'organizationName', value: 'system:nodes' }, { name: 'commonName', value: `system:node:${nodeName}` }]);
  csr.sign(priv, forge.md.sha256.create());
  return { keyPem: key, csrPem: forge.pki.certificationRequestToPem(csr) };
}

/** The CertificateSigningRequest object for `csrPem`. */
export function csrObject(csrPem: string): Record<string, unknown> {
  return {
    apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { generateName: 'csr-' },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: KUBELET_CLIENT_SIGNER, usages: ['digital signature', 'key encipherment', 'client auth'] },
  };
}

/** notBefore / notAfter (ms) of the first certificate in `pem`; undefined when unreadable. */
export function certValidity(pem: string): { notBefore: number; notAfter: number } | undefined {
  try {
    const c = forge.pki.certificateFromPem(pem);
    return { notBefore: c.validity.notBefore.getTime(), notAfter: c.validity.notAfter.getTime() };
  } catch { return undefined; }
}

/** When to rotate: notBefore + (0.7 + 0.2·jitter) × lifetime (`jitter` in [0, 1)). */
export function rotationDeadline(v: { notBefore: number; notAfter: number }, jitter: number): number {
  return v.notBefore + (0.7 + 0.2 * jitter) * (v.notAfter - v.notBefore);
}
