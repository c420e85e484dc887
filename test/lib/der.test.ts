/**
 * DER encoding and the bounded reader, against fixed encodings (X.690 examples and what OpenSSL
 * writes), and the certificates and CSRs built on them checked by OpenSSL itself (a real peer).
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as der from '../../src/lib/der.js';
import { createCertificate, csrInfo, ipBytes } from '../../src/lib/x509.js';
import { createCa, issueCert } from '../../src/server/pki.js';
import { nodeCsr } from '../../src/agent/certificate/csr.js';

const hex = (b: Buffer) => b.toString('hex');

describe('DER encoders', () => {
  it('encode lengths in short and long form', () => {
    expect(hex(der.octets(Buffer.alloc(3)))).toBe('0403000000');
    expect(hex(der.octets(Buffer.alloc(127)).subarray(0, 2))).toBe('047f');
    expect(hex(der.octets(Buffer.alloc(128)).subarray(0, 3))).toBe('048180');
    expect(hex(der.octets(Buffer.alloc(300)).subarray(0, 4))).toBe('0482012c');
  });

  it('encode OIDs, integers, named bits and times as X.690 and RFC 5280 require', () => {
    expect(hex(der.oid('1.2.840.113549.1.1.11'))).toBe('06092a864886f70d01010b');
    expect(hex(der.oid('2.5.29.17'))).toBe('0603551d11');
    expect(() => der.oid('1')).toThrow(/bad OID/);
    expect(() => der.oid('1.40')).toThrow(/bad OID/);
    // Positive integers: leading zeros dropped, a 0x00 added before a set high bit.
    expect(hex(der.uint(Buffer.from([0, 0, 5])))).toBe('020105');
    expect(hex(der.uint(Buffer.from([0x80])))).toBe('02020080');
    expect(hex(der.uint(Buffer.alloc(0)))).toBe('020100');
    // KeyUsage: digitalSignature + keyCertSign + cRLSign = 0x86 with one unused bit; trailing zeros dropped.
    expect(hex(der.namedBits([0, 5, 6]))).toBe('03020186');
    expect(hex(der.namedBits([0, 2]))).toBe('030205a0');
    expect(hex(der.namedBits([8]))).toBe('0303070080');
    expect(der.time(new Date('2049-12-31T23:59:59.999Z')).toString('latin1', 2)).toBe('491231235959Z');
    expect(der.time(new Date('2049-12-31T23:59:59Z'))[0]).toBe(der.Tag.UTC_TIME);
    expect(der.time(new Date('2050-01-01T00:00:00Z')).toString('latin1', 2)).toBe('20500101000000Z');
    expect(der.time(new Date('2050-01-01T00:00:00Z'))[0]).toBe(der.Tag.GENERALIZED_TIME);
  });

  it('read back what they write, and the OID and string forms', () => {
    const s = der.seq(
      der.oid('1.3.6.1.5.5.7.3.2'),
      der.utf8('système'),
      der.tlv(der.Tag.BMP_STRING, Buffer.from([0, 0x41, 0x26, 0x3a])),
    );
    const [o, u, b] = der.children(der.readElement(s).content);
    expect(der.oidString(o.content)).toBe('1.3.6.1.5.5.7.3.2');
    expect(der.oidString(der.readElement(der.oid('2.999.3')).content)).toBe('2.999.3');
    expect(der.directoryString(u)).toBe('système');
    expect(der.directoryString(b)).toBe('A☺');
    expect(() => der.directoryString(o)).toThrow(/directory string/);
    expect(der.fromPem('X', der.toPem('X', s)).equals(s)).toBe(true);
  });
});

describe('DER reader bounds', () => {
  it('rejects truncated, overlong, indefinite and multi-byte-tag input instead of reading past it', () => {
    expect(() => der.readElement(Buffer.from('30', 'hex'))).toThrow(/truncated/);
    expect(() => der.readElement(Buffer.from('3005020101', 'hex'))).toThrow(/runs past/);
    expect(() => der.readElement(Buffer.from('3080020101', 'hex'))).toThrow(/bad length/);
    expect(() => der.readElement(Buffer.from('3085ffffffffff', 'hex'))).toThrow(/bad length/);
    expect(() => der.readElement(Buffer.from('3084ffffffff00', 'hex'))).toThrow(/runs past/);
    expect(() => der.readElement(Buffer.from('1f8101', 'hex'))).toThrow(/multi-byte/);
    expect(() => der.children(Buffer.from('0201010201', 'hex'))).toThrow(/runs past/);
    expect(() => der.oidString(Buffer.from('ffffffffffffffffff7f', 'hex'))).toThrow(/too large/);
  });

  it('a CSR that is garbage, too large, or signed by another key is refused', async () => {
    await expect(csrInfo('not a csr')).rejects.toThrow(/no CERTIFICATE REQUEST/);
    await expect(csrInfo(der.toPem('CERTIFICATE REQUEST', Buffer.from('300a0201', 'hex')))).rejects.toThrow(/DER/);
    await expect(csrInfo('x'.repeat(70_000))).rejects.toThrow(/too large/);
    const { csrPem } = await nodeCsr('n1');
    const bytes = der.fromPem('CERTIFICATE REQUEST', csrPem);
    bytes[bytes.length - 5] ^= 1; // inside the signature
    const forged = der.toPem('CERTIFICATE REQUEST', bytes);
    expect((await csrInfo(forged)).subject.cn).toBe('system:node:n1');
    const ca = await createCa('ca');
    const opts = {
      subject: { cn: 'x' },
      issuer: { certPem: ca.cert, keyPem: ca.key },
      usage: 'client' as const,
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 1e6),
    };
    await expect(createCertificate({ ...opts, key: { csrPem: forged } })).rejects.toThrow(/CSR signature invalid/);
    await expect(createCertificate({ ...opts, key: { csrPem } })).resolves.toMatch(/BEGIN CERTIFICATE/);
  });
});

describe('IP SANs', () => {
  it('encode IPv4, IPv6, compressed and IPv4-mapped forms', () => {
    expect(hex(ipBytes('10.0.0.1'))).toBe('0a000001');
    expect(hex(ipBytes('::1'))).toBe('00000000000000000000000000000001');
    expect(hex(ipBytes('::'))).toBe('00000000000000000000000000000000');
    expect(hex(ipBytes('fe80::1:2'))).toBe('fe800000000000000000000000010002');
    expect(hex(ipBytes('2001:db8:0:0:1:0:0:1'))).toBe('20010db8000000000001000000000001');
    expect(hex(ipBytes('::ffff:1.2.3.4'))).toBe('00000000000000000000ffff01020304');
    expect(() => ipBytes('node-1')).toThrow(/not an IP/);
  });
});

describe('OpenSSL reads what is built', () => {
  it('verifies the chain, parses every field strictly, and verifies a CSR', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsk-der-'));
    const ca = await createCa('tsk-ca');
    const leaf = await issueCert(ca, {
      cn: 'node-1',
      server: true,
      sans: { dns: ['node-1'], ips: ['192.168.1.2', 'fd00::2'] },
    });
    writeFileSync(join(dir, 'ca.pem'), ca.cert);
    writeFileSync(join(dir, 'leaf.pem'), leaf.cert);
    writeFileSync(join(dir, 'csr.pem'), (await nodeCsr('n1')).csrPem);
    const run = (...args: string[]) =>
      execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(run('verify', '-purpose', 'sslserver', '-CAfile', join(dir, 'ca.pem'), join(dir, 'leaf.pem'))).toContain(
      'OK',
    );
    const text = run('x509', '-in', join(dir, 'leaf.pem'), '-noout', '-text');
    expect(text).toContain('Version: 3 (0x2)');
    expect(text).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature, Key Encipherment/);
    expect(text).toMatch(/Extended Key Usage:\s+TLS Web Server Authentication/);
    expect(text).toContain('DNS:node-1, IP Address:192.168.1.2, IP Address:FD00:0:0:0:0:0:0:2');
    expect(run('x509', '-in', join(dir, 'ca.pem'), '-noout', '-text')).toMatch(
      /CA:TRUE[\s\S]*Certificate Sign, CRL Sign/,
    );
    expect(run('req', '-in', join(dir, 'csr.pem'), '-verify', '-noout', '-subject')).toContain(
      'subject=O = system:nodes, CN = system:node:n1',
    );
  });
});
