/**
 * Local PKI for standalone mode: a CA, a serving certificate for 10250 signed by it, and an
 * admin client certificate (CN=tskubelet-admin, O=system:masters), under <root-dir>/pki.
 * Existing files are reused; keys are written 0600.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import forge from 'node-forge';
import { writeFileAtomic } from '../lib/fs-util.js';

/** Paths of the local PKI files. */
export interface LocalPki { dir: string; caCert: string; caKey: string; serverCert: string; serverKey: string; adminCert: string; adminKey: string }

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  return forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
}

function certFor(opts: { cn: string; o?: string; key: forge.pki.rsa.PrivateKey; issuer?: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey }; ca?: boolean; server?: boolean; sans?: { dns: string[]; ips: string[] }; years: number; notAfter?: Date }) {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(opts.key.n, opts.key.e);
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  cert.validity.notBefore = new Date(Date.now() - 86_400_000);
  cert.validity.notAfter = opts.notAfter ?? new Date(Date.now() + opts.years * 365 * 86_400_000);
  const subject = [{ name: 'commonName', value: opts.cn }, ...(opts.o ? [{ name: 'organizationName', value: opts.o }] : [])];
  cert.setSubject(subject);
  cert.setIssuer(opts.issuer ? opts.issuer.cert.subject.attributes : subject);
  const ext: object[] = [{ name: 'basicConstraints', cA: !!opts.ca, critical: true }];
  if (opts.ca) ext.push({ name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true });
  else ext.push({ name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true }, { name: 'extKeyUsage', serverAuth: !!opts.server, clientAuth: !opts.server });
  if (opts.sans) ext.push({ name: 'subjectAltName', altNames: [...opts.sans.dns.map((value) => ({ type: 2, value })), ...opts.sans.ips.map((ip) => ({ type: 7, ip }))] });
  cert.setExtensions(ext);
  cert.sign(opts.issuer?.key ?? opts.key, forge.md.sha256.create());
  return cert;
}

/** A certificate and key in PEM, plus what is needed to sign with it when it is a CA. */
export interface PemPair { cert: string; key: string; forge: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey } }

/** A new self-signed CA. */
export function createCa(cn: string): PemPair {
  const key = newKey();
  const cert = certFor({ cn, key, ca: true, years: 10 });
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(key), forge: { cert, key } };
}

/** A leaf certificate signed by `ca`: client (default) or server, optionally already expired. */
export function issueCert(ca: PemPair, o: { cn: string; org?: string; server?: boolean; sans?: { dns: string[]; ips: string[] }; expired?: boolean }): PemPair {
  const key = newKey();
  const cert = certFor({ cn: o.cn, o: o.org, key, issuer: ca.forge, server: o.server, sans: o.sans, years: 1, notAfter: o.expired ? new Date(Date.now() - 3_600_000) : undefined });
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(key), forge: { cert, key } };
}

async function exists(p: string) { try { await readFile(p); return true; } catch { return false; } }

/** Creates whatever is missing and returns the paths. */
export async function ensureLocalPki(dir: string, opts: { nodeName: string; ips: string[] }): Promise<LocalPki> {
  const p: LocalPki = {
    dir, caCert: join(dir, 'ca.crt'), caKey: join(dir, 'ca.key'), serverCert: join(dir, 'kubelet.crt'), serverKey: join(dir, 'kubelet.key'),
    adminCert: join(dir, 'admin.crt'), adminKey: join(dir, 'admin.key'),
  };
  let ca: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey };
  if (await exists(p.caCert) && await exists(p.caKey)) {
    ca = { cert: forge.pki.certificateFromPem(await readFile(p.caCert, 'utf8')), key: forge.pki.privateKeyFromPem(await readFile(p.caKey, 'utf8')) as forge.pki.rsa.PrivateKey };
  } else {
    const key = newKey();
    ca = { cert: certFor({ cn: `tskubelet-ca@${opts.nodeName}`, key, ca: true, years: 10 }), key };
    await writeFileAtomic(p.caKey, forge.pki.privateKeyToPem(key), 0o600);
    await writeFileAtomic(p.caCert, forge.pki.certificateToPem(ca.cert));
  }
  if (!(await exists(p.serverCert)) || !(await exists(p.serverKey))) {
    const key = newKey();
    const cert = certFor({ cn: opts.nodeName, key, issuer: ca, server: true, years: 1, sans: { dns: [opts.nodeName, 'localhost'], ips: [...new Set(['127.0.0.1', '::1', ...opts.ips])] } });
    await writeFileAtomic(p.serverKey, forge.pki.privateKeyToPem(key), 0o600);
    await writeFileAtomic(p.serverCert, forge.pki.certificateToPem(cert));
  }
  if (!(await exists(p.adminCert)) || !(await exists(p.adminKey))) {
    const key = newKey();
    const cert = certFor({ cn: 'tskubelet-admin', o: 'system:masters', key, issuer: ca, years: 1 });
    await writeFileAtomic(p.adminKey, forge.pki.privateKeyToPem(key), 0o600);
    await writeFileAtomic(p.adminCert, forge.pki.certificateToPem(cert));
  }
  return p;
}
