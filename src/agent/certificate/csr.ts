/**
 * The kubelet client certificate's pure parts (upstream pkg/kubelet/certificate): the CSR
 * (`CN=system:node:<node>`, `O=system:nodes`, RSA 2048, SHA-256) as the CSR API expects it,
 * the CertificateSigningRequest object (signer `kubernetes.io/kube-apiserver-client-kubelet`),
 * the validity of a PEM certificate, and the rotation deadline (a jittered 70–90 % of the
 * lifetime, as upstream's certificate manager).
 */
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
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

/** The usages of the kubelet's client certificate requests. */
export const KUBELET_CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];

/**
 * Upstream digestedName: `node-csr-` + base64url(SHA-512/256 of the public key (PKIX DER), the
 * subject's CN and O and the usages, each base64url-encoded and '|'-terminated). The same key and
 * request give the same name, so a kubelet restarted while its CSR is pending finds it again.
 */
export function csrName(keyPem: string, o: { commonName: string; organizations: string[]; usages: string[] }): string {
  const hash = createHash('sha512-256');
  const write = (b: Buffer) => { hash.update(b.toString('base64url')); hash.update('|'); };
  write(createPublicKey(keyPem).export({ type: 'spki', format: 'der' }));
  write(Buffer.from(o.commonName));
  for (const org of o.organizations) write(Buffer.from(org));
  for (const u of o.usages) write(Buffer.from(u));
  return `node-csr-${hash.digest('base64url')}`;
}

/** The CertificateSigningRequest object for `csrPem` (named `name`, else generated). */
export function csrObject(csrPem: string, name?: string): Record<string, unknown> {
  return {
    apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: name ? { name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: KUBELET_CLIENT_SIGNER, usages: KUBELET_CLIENT_USAGES },
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
