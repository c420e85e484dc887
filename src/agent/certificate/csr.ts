/**
 * The kubelet client certificate's pure parts (upstream pkg/kubelet/certificate): the CSR
 * (`CN=system:node:<node>`, `O=system:nodes`, ECDSA P-256 as upstream's key generation) as the CSR API expects it,
 * the CertificateSigningRequest object (signer `kubernetes.io/kube-apiserver-client-kubelet`),
 * the validity of a PEM certificate, and the rotation deadline (a jittered 70–90 % of the
 * lifetime, as upstream's certificate manager).
 */
import { createHash, createPublicKey } from 'node:crypto';
import { createCsr, csrInfo, newKeyPem } from '../../lib/x509.js';

export { certValidity } from '../../lib/x509.js';

/** The signer the kubelet's client certificates come from. */
export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** The signer of the kubelet's serving certificates (serverTLSBootstrap). */
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

/**
 * A private key (the one given, else a new one; PKCS#8 PEM) and a CSR for the node (PEM), with `sans` for a serving
 * certificate.
 */
export async function nodeCsr(
  nodeName: string,
  keyPem?: string,
  sans?: { dns: string[]; ips: string[] },
): Promise<{ keyPem: string; csrPem: string }> {
  const key = keyPem ?? (await newKeyPem());
  return { keyPem: key, csrPem: await createCsr({ cn: `system:node:${nodeName}`, o: ['system:nodes'] }, key, sans) };
}

/** The usages of a kubelet serving certificate request for `keyPem` (upstream: key encipherment only for RSA keys). */
export function kubeletServingUsages(keyPem: string): string[] {
  return createPublicKey(keyPem).asymmetricKeyType === 'rsa'
    ? ['digital signature', 'key encipherment', 'server auth']
    : ['digital signature', 'server auth'];
}

/**
 * The usages of a kubelet client certificate request for `keyPem`, as upstream's
 * DefaultKubeletClientGetUsages: key encipherment only for RSA keys.
 */
export function kubeletClientUsages(keyPem: string): string[] {
  return createPublicKey(keyPem).asymmetricKeyType === 'rsa'
    ? ['digital signature', 'key encipherment', 'client auth']
    : ['digital signature', 'client auth'];
}

/**
 * Upstream digestedName: `node-csr-` + base64url(SHA-512/256 of the public key (PKIX DER), the
 * subject's CN and O and the usages, each base64url-encoded and '|'-terminated). The same key and
 * request give the same name, so a kubelet restarted while its CSR is pending finds it again.
 */
export function csrName(keyPem: string, o: { commonName: string; organizations: string[]; usages: string[] }): string {
  const hash = createHash('sha512-256');
  const write = (b: Buffer) => {
    hash.update(b.toString('base64url'));
    hash.update('|');
  };
  write(createPublicKey(keyPem).export({ type: 'spki', format: 'der' }));
  write(Buffer.from(o.commonName));
  for (const org of o.organizations) write(Buffer.from(org));
  for (const u of o.usages) write(Buffer.from(u));
  return `node-csr-${hash.digest('base64url')}`;
}

/**
 * Whether an existing CSR object (found under our name after a restart) is the request we would
 * file, as upstream's ensureCompatible: same signer, usages, subject and public key (ECDSA
 * signatures differ from one signing to the next, so the PEM bytes are not compared).
 */
export async function compatibleCsr(
  existing: { spec?: { request?: string; signerName?: string; usages?: string[] } },
  want: { csrPem: string; usages: string[]; signer?: string },
): Promise<boolean> {
  const spec = existing.spec;
  if (
    !spec?.request ||
    spec.signerName !== (want.signer ?? KUBELET_CLIENT_SIGNER) ||
    [...(spec.usages ?? [])].sort().join() !== [...want.usages].sort().join()
  )
    return false;
  try {
    const [a, b] = await Promise.all([
      csrInfo(Buffer.from(spec.request, 'base64').toString('utf8')),
      csrInfo(want.csrPem),
    ]);
    return (
      a.subject.cn === b.subject.cn &&
      [...(a.subject.o ?? [])].sort().join() === [...(b.subject.o ?? [])].sort().join() &&
      a.publicKeyDer.equals(b.publicKeyDer)
    );
  } catch {
    return false;
  }
}

/** The CertificateSigningRequest object for `csrPem` (named `name`, else generated). */
export function csrObject(
  csrPem: string,
  usages: string[],
  name?: string,
  signer = KUBELET_CLIENT_SIGNER,
): Record<string, unknown> {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: name ? { name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: signer, usages },
  };
}

/** When to rotate: notBefore + (0.7 + 0.2·jitter) × lifetime (`jitter` in [0, 1)). */
export function rotationDeadline(v: { notBefore: number; notAfter: number }, jitter: number): number {
  return v.notBefore + (0.7 + 0.2 * jitter) * (v.notAfter - v.notBefore);
}
