/**
 * X.509 on native crypto: keys from `node:crypto` (ECDSA P-256, as upstream's kubelet and
 * kubeadm generate them), certificates and PKCS#10 requests encoded here in DER (`der.ts`) and
 * signed by `node:crypto`. Parsing certificates is node:crypto's (X509Certificate); a CSR is read
 * by the bounded DER reader and its signature checked natively.
 *
 * What is encoded is what the kubelet needs and no more: subject CN and O, validity, the key,
 * basic constraints and key usage (critical), extended key usage, DNS and IP SANs. Signing keys
 * may be EC P-256 / P-384 (ECDSA with SHA-256 / SHA-384) or RSA (PKCS #1 v1.5 with SHA-256),
 * so existing RSA keys keep working.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  randomBytes,
  sign,
  verify,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import { promisify } from 'node:util';
import * as der from './der.js';

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

const OID = {
  cn: '2.5.4.3',
  o: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  extensionRequest: '1.2.840.113549.1.9.14',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  ecdsaSha256: '1.2.840.10045.4.3.2',
  ecdsaSha384: '1.2.840.10045.4.3.3',
  ecdsaSha512: '1.2.840.10045.4.3.4',
  rsaSha256: '1.2.840.113549.1.1.11',
  rsaSha384: '1.2.840.113549.1.1.12',
  rsaSha512: '1.2.840.113549.1.1.13',
} as const;

/** The hash of each signature algorithm a CSR may be signed with. */
const hashOfSignature = new Map<string, string>([
  [OID.ecdsaSha256, 'sha256'],
  [OID.ecdsaSha384, 'sha384'],
  [OID.ecdsaSha512, 'sha512'],
  [OID.rsaSha256, 'sha256'],
  [OID.rsaSha384, 'sha384'],
  [OID.rsaSha512, 'sha512'],
]);

/** How `key` signs: the AlgorithmIdentifier and the hash. */
function signatureOf(key: KeyObject): { algorithm: Buffer; hash: string } {
  if (key.asymmetricKeyType === 'ec') {
    const p384 = key.asymmetricKeyDetails?.namedCurve === 'secp384r1';
    return { algorithm: der.seq(der.oid(p384 ? OID.ecdsaSha384 : OID.ecdsaSha256)), hash: p384 ? 'sha384' : 'sha256' };
  }
  // RFC 4055: the parameters of sha256WithRSAEncryption are NULL.
  if (key.asymmetricKeyType === 'rsa')
    return { algorithm: der.seq(der.oid(OID.rsaSha256), der.tlv(der.Tag.NULL, Buffer.alloc(0))), hash: 'sha256' };
  throw new Error(`unsupported key type ${key.asymmetricKeyType ?? 'unknown'}`);
}

/** `tbs` signed with `key`: the signed structure (certificate or request). */
function signed(tbs: Buffer, key: KeyObject): Buffer {
  const { algorithm, hash } = signatureOf(key);
  return der.seq(tbs, algorithm, der.bits(sign(hash, tbs, key)));
}

const rdn = (type: string, value: string) => der.set(der.seq(der.oid(type), der.utf8(value)));

/** A Name with the common name first, then the organizations (as certificates here always had). */
const certName = (s: Subject) => der.seq(rdn(OID.cn, s.cn), ...(s.o ?? []).map((o) => rdn(OID.o, o)));

/** The 4 or 16 bytes of an IP address. */
export function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  let text = ip.replace(/%.*$/, '');
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4)
    text =
      text.slice(0, v4.index) + ((+v4[1] << 8) | +v4[2]).toString(16) + ':' + ((+v4[3] << 8) | +v4[4]).toString(16);
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), 2 * i));
  return out;
}

/** An Extension: id, critical (encoded only when true) and the DER value. */
const extension = (id: string, critical: boolean, value: Buffer) =>
  der.seq(der.oid(id), ...(critical ? [der.bool(true)] : []), der.octets(value));

/** KeyUsage bits (RFC 5280 4.2.1.3). */
const KU = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

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

/** The subjectAltName extension for DNS names and IPs. */
function sanExtension(sans: { dns: string[]; ips: string[] }): Buffer {
  const names = [
    ...sans.dns.map((d) => der.tlv(0x82, Buffer.from(d, 'latin1'))),
    ...sans.ips.map((ip) => der.tlv(0x87, ipBytes(ip))),
  ];
  return extension(OID.subjectAltName, false, der.seq(...names));
}

/** An IP SAN's bytes as text (dotted IPv4, or IPv6 in full hex groups). */
function ipText(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  const groups: string[] = [];
  for (let i = 0; i + 1 < b.length; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  return groups.join(':');
}

/** The extensions of a certificate for `o`. */
function extensions(o: CertOptions): Buffer[] {
  const ca = o.usage === 'ca';
  const out = [
    extension(OID.basicConstraints, true, der.seq(...(ca ? [der.bool(true)] : []))),
    extension(
      OID.keyUsage,
      true,
      der.namedBits(ca ? [KU.digitalSignature, KU.keyCertSign, KU.cRLSign] : [KU.digitalSignature, KU.keyEncipherment]),
    ),
  ];
  if (!ca)
    out.push(
      extension(OID.extKeyUsage, false, der.seq(der.oid(o.usage === 'server' ? OID.serverAuth : OID.clientAuth))),
    );
  if (o.sans) out.push(sanExtension(o.sans));
  return out;
}

/** The subject Name of a certificate, as encoded in it (a leaf's issuer must be exactly this). */
function subjectOfCert(certPem: string): Buffer {
  const cert = der.expectTag(der.readElement(der.fromPem('CERTIFICATE', certPem)), der.Tag.SEQUENCE, 'Certificate');
  const tbs = der.children(der.expectTag(der.children(cert.content)[0], der.Tag.SEQUENCE, 'TBSCertificate').content);
  // [0] version, serial, signature, issuer, validity, subject
  const i = tbs[0]?.tag === 0xa0 ? 1 : 0;
  return der.expectTag(tbs[i + 4], der.Tag.SEQUENCE, 'subject').raw;
}

/** Builds and signs a certificate; returns its PEM. */
export async function createCertificate(o: CertOptions): Promise<string> {
  const signer = createPrivateKey(o.issuer?.keyPem ?? ('privateKeyPem' in o.key ? o.key.privateKeyPem : ''));
  let spki: Buffer;
  if ('privateKeyPem' in o.key) spki = createPublicKey(o.key.privateKeyPem).export({ type: 'spki', format: 'der' });
  else {
    const csr = readCsr(o.key.csrPem);
    if (!csr.signatureValid) throw new Error('CSR signature invalid');
    spki = csr.spki;
  }
  // A positive 128-bit serial (RFC 5280: at most 20 octets).
  const serial = Buffer.concat([Buffer.from([0x01]), randomBytes(15)]);
  const tbs = der.seq(
    der.explicit(0, der.uint(Buffer.from([2]))), // v3
    der.uint(serial),
    signatureOf(signer).algorithm,
    o.issuer ? subjectOfCert(o.issuer.certPem) : certName(o.subject),
    der.seq(der.time(o.notBefore), der.time(o.notAfter)),
    certName(o.subject),
    spki,
    der.explicit(3, der.seq(...extensions(o))),
  );
  return der.toPem('CERTIFICATE', signed(tbs, signer));
}

/** A PKCS#10 request for `subject` (and `sans`, as an extension request) signed with `keyPem`; returns its PEM. */
export async function createCsr(
  subject: Subject,
  keyPem: string,
  sans?: { dns: string[]; ips: string[] },
): Promise<string> {
  const key = createPrivateKey(keyPem);
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  // Organizations first, then the common name, as upstream's node CSRs; attributes only for SANs.
  const name = der.seq(...(subject.o ?? []).map((o) => rdn(OID.o, o)), rdn(OID.cn, subject.cn));
  const attributes = sans
    ? der.seq(der.oid(OID.extensionRequest), der.set(der.seq(sanExtension(sans))))
    : Buffer.alloc(0);
  const info = der.seq(der.uint(Buffer.from([0])), name, spki, der.tlv(0xa0, attributes));
  return der.toPem('CERTIFICATE REQUEST', signed(info, key));
}

/** The largest CSR read (an apiserver object's field; real ones are under 2 KiB). */
const MAX_CSR_BYTES = 64 * 1024;

/** The DNS and IP SANs in a CSR's attributes ([0] content), if it asks for any. */
function csrSans(attributes: Buffer | undefined): { dns: string[]; ips: string[] } | undefined {
  for (const attr of attributes ? der.children(attributes) : []) {
    const [type, values] = der.children(der.expectTag(attr, der.Tag.SEQUENCE, 'Attribute').content);
    if (der.oidString(der.expectTag(type, der.Tag.OID, 'attribute type').content) !== OID.extensionRequest) continue;
    for (const exts of der.children(der.expectTag(values, der.Tag.SET, 'attribute values').content))
      for (const ext of der.children(der.expectTag(exts, der.Tag.SEQUENCE, 'Extensions').content)) {
        const parts = der.children(der.expectTag(ext, der.Tag.SEQUENCE, 'Extension').content);
        if (der.oidString(der.expectTag(parts[0], der.Tag.OID, 'extension id').content) !== OID.subjectAltName)
          continue;
        const value = der.expectTag(parts[parts.length - 1], der.Tag.OCTET_STRING, 'extension value').content;
        const out = { dns: [] as string[], ips: [] as string[] };
        for (const n of der.children(der.expectTag(der.readElement(value), der.Tag.SEQUENCE, 'GeneralNames').content)) {
          if (n.tag === 0x82) out.dns.push(n.content.toString('latin1'));
          else if (n.tag === 0x87) out.ips.push(ipText(n.content));
        }
        return out;
      }
  }
  return undefined;
}

/** A CSR's subject, public key (SPKI DER), SANs and whether its signature verifies with that key. */
function readCsr(csrPem: string): {
  subject: Subject;
  spki: Buffer;
  sans?: { dns: string[]; ips: string[] };
  signatureValid: boolean;
} {
  if (csrPem.length > MAX_CSR_BYTES) throw new Error('CSR too large');
  const outer = der.expectTag(
    der.readElement(der.fromPem('CERTIFICATE REQUEST', csrPem)),
    der.Tag.SEQUENCE,
    'CertificationRequest',
  );
  const [info, algorithm, signature] = der.children(outer.content);
  der.expectTag(info, der.Tag.SEQUENCE, 'CertificationRequestInfo');
  const [, name, spki, attributes] = der.children(info.content);
  const subject: Subject = { cn: '', o: [] };
  for (const set of der.children(der.expectTag(name, der.Tag.SEQUENCE, 'subject').content)) {
    for (const atv of der.children(der.expectTag(set, der.Tag.SET, 'RDN').content)) {
      const [type, value] = der.children(der.expectTag(atv, der.Tag.SEQUENCE, 'AttributeTypeAndValue').content);
      const id = der.oidString(der.expectTag(type, der.Tag.OID, 'attribute type').content);
      if (id === OID.cn && !subject.cn) subject.cn = der.directoryString(value);
      else if (id === OID.o) subject.o!.push(der.directoryString(value));
    }
  }
  der.expectTag(spki, der.Tag.SEQUENCE, 'SubjectPublicKeyInfo');
  const algId = der.oidString(
    der.expectTag(
      der.children(der.expectTag(algorithm, der.Tag.SEQUENCE, 'signatureAlgorithm').content)[0],
      der.Tag.OID,
      'algorithm',
    ).content,
  );
  const sig = der.expectTag(signature, der.Tag.BIT_STRING, 'signature').content;
  const hash = hashOfSignature.get(algId);
  let signatureValid = false;
  if (hash && sig[0] === 0) {
    try {
      signatureValid = verify(
        hash,
        info.raw,
        createPublicKey({ key: spki.raw, format: 'der', type: 'spki' }),
        sig.subarray(1),
      );
    } catch {
      signatureValid = false;
    }
  }
  return {
    subject,
    spki: Buffer.from(spki.raw),
    sans: csrSans(attributes?.tag === 0xa0 ? attributes.content : undefined),
    signatureValid,
  };
}

/** The subject of a CSR PEM (CN and O), parsed. */
export async function csrSubject(csrPem: string): Promise<Subject> {
  return (await csrInfo(csrPem)).subject;
}

/** A CSR PEM's subject and public key (SPKI DER), parsed. */
export async function csrInfo(
  csrPem: string,
): Promise<{ subject: Subject; publicKeyDer: Buffer; sans?: { dns: string[]; ips: string[] } }> {
  const { subject, spki, sans } = readCsr(csrPem);
  return { subject, publicKeyDer: spki, sans };
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
