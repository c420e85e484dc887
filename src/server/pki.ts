/**
 * Local PKI for standalone mode: a CA, a serving certificate for 10250 signed by it, and an
 * admin client certificate (CN=tskubelet-admin, O=system:masters), under <root-dir>/pki.
 * Existing files are reused; keys (ECDSA P-256) are written 0600. Generation is native
 * (`lib/x509.ts`), so a fresh root dir costs milliseconds, not seconds.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists as exists, writeFileAtomic } from '../lib/fs-util.js';
import { createCertificate, newKeyPem } from '../lib/x509.js';

/** Paths of the local PKI files. */
export interface LocalPki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
}

/** A certificate and its key, PEM. */
export interface PemPair {
  cert: string;
  key: string;
}

const DAY = 86_400_000;

/** A new self-signed CA (10 years). */
export async function createCa(cn: string): Promise<PemPair> {
  const key = await newKeyPem();
  const cert = await createCertificate({
    subject: { cn },
    key: { privateKeyPem: key },
    usage: 'ca',
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 3650 * DAY),
  });
  return { cert, key };
}

/** A leaf certificate signed by `ca`: client (default) or server, optionally already expired. */
export async function issueCert(
  ca: PemPair,
  o: { cn: string; org?: string; server?: boolean; sans?: { dns: string[]; ips: string[] }; expired?: boolean },
): Promise<PemPair> {
  const key = await newKeyPem();
  const cert = await createCertificate({
    subject: { cn: o.cn, o: o.org ? [o.org] : [] },
    key: { privateKeyPem: key },
    issuer: { certPem: ca.cert, keyPem: ca.key },
    usage: o.server ? 'server' : 'client',
    sans: o.sans,
    notBefore: new Date(Date.now() - DAY),
    notAfter: o.expired ? new Date(Date.now() - 3_600_000) : new Date(Date.now() + 365 * DAY),
  });
  return { cert, key };
}

/** Writes a pair (key 0600 first, then the certificate). */
async function writePair(certPath: string, keyPath: string, p: PemPair): Promise<void> {
  await writeFileAtomic(keyPath, p.key, 0o600);
  await writeFileAtomic(certPath, p.cert);
}

/** Creates whatever is missing and returns the paths. */
export async function ensureLocalPki(dir: string, opts: { nodeName: string; ips: string[] }): Promise<LocalPki> {
  const p: LocalPki = {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'kubelet.crt'),
    serverKey: join(dir, 'kubelet.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
  };
  const [haveCa, haveServer, haveAdmin] = await Promise.all([
    Promise.all([exists(p.caCert), exists(p.caKey)]),
    Promise.all([exists(p.serverCert), exists(p.serverKey)]),
    Promise.all([exists(p.adminCert), exists(p.adminKey)]),
  ]).then((r) => r.map(([a, b]) => a && b));
  if (haveCa && haveServer && haveAdmin) return p;
  let ca: PemPair;
  if (haveCa) ca = { cert: await readFile(p.caCert, 'utf8'), key: await readFile(p.caKey, 'utf8') };
  else {
    ca = await createCa(`tskubelet-ca@${opts.nodeName}`);
    await writePair(p.caCert, p.caKey, ca);
  }
  await Promise.all([
    !haveServer &&
      issueCert(ca, {
        cn: opts.nodeName,
        server: true,
        sans: { dns: [opts.nodeName, 'localhost'], ips: [...new Set(['127.0.0.1', '::1', ...opts.ips])] },
      }).then((s) => writePair(p.serverCert, p.serverKey, s)),
    !haveAdmin &&
      issueCert(ca, { cn: 'tskubelet-admin', org: 'system:masters' }).then((a) =>
        writePair(p.adminCert, p.adminKey, a),
      ),
  ]);
  return p;
}
