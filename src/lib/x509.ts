/**
 * X.509 on native crypto: keys from `node:crypto` (ECDSA P-256, as upstream's kubelet and
 * kubeadm generate them), certificates and CSRs built by `@peculiar/x509` over WebCrypto. The
 * library is loaded on first use only, so a kubelet whose certificates exist never loads it.
 * Existing RSA keys are still accepted (signing with RSASSA-PKCS1-v1_5 / SHA-256).
 */
import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, webcrypto, X509Certificate, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';

type X509Lib = typeof import('@peculiar/x509');
let lib: Promise<X509Lib> | undefined;
const crypto = webcrypto as unknown as Crypto;

function x509(): Promise<X509Lib> {
  // @peculiar/x509's dependency injection (tsyringe) needs the Reflect metadata polyfill first.
  lib ??= import('reflect-metadata')
    .then(() => import('@peculiar/x509'))
    .then((m) => {
      m.cryptoProvider.set(crypto);
      return m;
    });
  return lib;
}

/** A subject: common name and organizations. */
export interface Subject {
  cn: string;
  o?: string[];
}

/** A new private key: ECDSA P-256, PKCS#8 PEM. */
export async function newKeyPem(): Promise<string> {
  const { privateKey } = await promisify(generateKeyPair)('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

/** The WebCrypto signing algorithm of a key (EC P-256/P-384 or RSA). */
function algorithmOf(k: KeyObject): (EcKeyImportParams & EcdsaParams) | RsaHashedImportParams {
  if (k.asymmetricKeyType === 'ec') {
    const curve = k.asymmetricKeyDetails?.namedCurve === 'secp384r1' ? 'P-384' : 'P-256';
    return { name: 'ECDSA', namedCurve: curve, hash: curve === 'P-384' ? 'SHA-384' : 'SHA-256' };
  }
  if (k.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  throw new Error(`unsupported key type ${k.asymmetricKeyType ?? 'unknown'}`);
}

/** A PEM private key as a WebCrypto key pair plus its algorithm. */
async function importPair(keyPem: string): Promise<{ keys: CryptoKeyPair; alg: EcdsaParams | RsaHashedImportParams }> {
  const priv = createPrivateKey(keyPem);
  const alg = algorithmOf(priv);
  const privateKey = await crypto.subtle.importKey('pkcs8', priv.export({ type: 'pkcs8', format: 'der' }), alg, true, ['sign']);
  const publicKey = await crypto.subtle.importKey('spki', createPublicKey(priv).export({ type: 'spki', format: 'der' }), alg, true, ['verify']);
  return { keys: { privateKey, publicKey }, alg };
}

const name = (s: Subject) => [{ CN: [s.cn] }, ...(s.o ?? []).map((o) => ({ O: [o] }))];

/** What a certificate is for. */
export interface CertOptions {
  subject: Subject;
  /** PEM public material of the certified key: its private key (PEM) or a CSR (PEM). */
  key: { privateKeyPem: string } | { csrPem: string };
  /** The issuer (a CA certificate and key); self-signed when absent. */
  issuer?: { certPem: string; keyPem: string };
  usage: 'ca' | 'server' | 'client';
  sans?: { dns: string[]; ips: string[] };
  notBefore: Date;
  notAfter: Date;
}

/** Builds and signs a certificate; returns its PEM. */
export async function createCertificate(o: CertOptions): Promise<string> {
  const m = await x509();
  const signer = await importPair(o.issuer?.keyPem ?? ('privateKeyPem' in o.key ? o.key.privateKeyPem : ''));
  let publicKey: CryptoKey;
  // Self-signed: the signer's own public key; otherwise the certified key's.
  if ('privateKeyPem' in o.key) publicKey = o.issuer ? (await importPair(o.key.privateKeyPem)).keys.publicKey : signer.keys.publicKey;
  else {
    const csr = new m.Pkcs10CertificateRequest(o.key.csrPem);
    if (!(await csr.verify())) throw new Error('CSR signature invalid');
    publicKey = await csr.publicKey.export();
  }
  const { KeyUsageFlags: F } = m;
  const extensions = [
    new m.BasicConstraintsExtension(o.usage === 'ca', undefined, true),
    new m.KeyUsagesExtension(o.usage === 'ca' ? F.keyCertSign | F.cRLSign | F.digitalSignature : F.digitalSignature | F.keyEncipherment, true),
    ...(o.usage === 'ca' ? [] : [new m.ExtendedKeyUsageExtension([o.usage === 'server' ? m.ExtendedKeyUsage.serverAuth : m.ExtendedKeyUsage.clientAuth])]),
    ...(o.sans
      ? [
          new m.SubjectAlternativeNameExtension([
            ...o.sans.dns.map((value) => ({ type: 'dns' as const, value })),
            ...o.sans.ips.map((value) => ({ type: 'ip' as const, value })),
          ]),
        ]
      : []),
  ];
  const cert = await m.X509CertificateGenerator.create({
    serialNumber: `01${randomBytes(15).toString('hex')}`,
    subject: name(o.subject),
    issuer: o.issuer ? new m.X509Certificate(o.issuer.certPem).subject : name(o.subject),
    notBefore: o.notBefore,
    notAfter: o.notAfter,
    extensions,
    signingAlgorithm: signer.alg,
    publicKey,
    signingKey: signer.keys.privateKey,
  });
  return cert.toString('pem');
}

/** A PKCS#10 request for `subject` signed with `keyPem`; returns its PEM. */
export async function createCsr(subject: Subject, keyPem: string): Promise<string> {
  const m = await x509();
  const { keys, alg } = await importPair(keyPem);
  const csr = await m.Pkcs10CertificateRequestGenerator.create({
    name: [...(subject.o ?? []).map((o) => ({ O: [o] })), { CN: [subject.cn] }],
    keys,
    signingAlgorithm: alg,
  });
  return csr.toString('pem');
}

/** The subject of a CSR PEM (CN and O), parsed. */
export async function csrSubject(csrPem: string): Promise<Subject> {
  return (await csrInfo(csrPem)).subject;
}

/** A CSR PEM's subject and public key (SPKI DER), parsed. */
export async function csrInfo(csrPem: string): Promise<{ subject: Subject; publicKeyDer: Buffer }> {
  const m = await x509();
  const csr = new m.Pkcs10CertificateRequest(csrPem);
  return { subject: { cn: csr.subjectName.getField('CN')[0] ?? '', o: csr.subjectName.getField('O') }, publicKeyDer: Buffer.from(csr.publicKey.rawData) };
}

/** notBefore / notAfter (ms) of the first certificate in `pem` (native parser); undefined when unreadable. */
export function certValidity(pem: string): { notBefore: number; notAfter: number } | undefined {
  try {
    const c = new X509Certificate(pem);
    return { notBefore: Date.parse(c.validFrom), notAfter: Date.parse(c.validTo) };
  } catch {
    return undefined;
  }
}
