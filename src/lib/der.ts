/**
 * DER (ASN.1 Distinguished Encoding Rules): the few encoders X.509 certificates and PKCS#10
 * requests need, and a bounded reader. Pure; no ASN.1 schema machinery.
 *
 * The reader takes definite lengths only (DER has no other), at most 4 length bytes, and checks
 * that every element lies inside its parent; it never recurses on its own, so depth is whatever
 * path the caller walks.
 */

/** A tag byte: universal, context-specific and constructed forms used here. */
export const Tag = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  T61_STRING: 0x14,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  BMP_STRING: 0x1e,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** A tag-length-value with `content` as given. */
export function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, content]);
}

export const seq = (...items: Buffer[]): Buffer => tlv(Tag.SEQUENCE, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(Tag.SET, Buffer.concat(items));
/** [n] EXPLICIT: a constructed context-specific wrapper. */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);
export const bool = (v: boolean): Buffer => tlv(Tag.BOOLEAN, Buffer.from([v ? 0xff : 0]));
export const octets = (b: Buffer): Buffer => tlv(Tag.OCTET_STRING, b);
export const utf8 = (s: string): Buffer => tlv(Tag.UTF8_STRING, Buffer.from(s, 'utf8'));
/** A BIT STRING of whole bytes (no unused bits). */
export const bits = (b: Buffer): Buffer => tlv(Tag.BIT_STRING, Buffer.concat([Buffer.from([0]), b]));

/** A non-negative INTEGER from its big-endian magnitude (leading zeros dropped, a sign byte added when needed). */
export function uint(magnitude: Buffer): Buffer {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  const m = magnitude.length ? magnitude.subarray(i) : Buffer.from([0]);
  return tlv(Tag.INTEGER, m[0] & 0x80 ? Buffer.concat([Buffer.from([0]), m]) : m);
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  if (
    arcs.length < 2 ||
    arcs.some((a) => !Number.isSafeInteger(a) || a < 0) ||
    arcs[0] > 2 ||
    (arcs[0] < 2 && arcs[1] >= 40)
  )
    throw new Error(`bad OID ${dotted}`);
  // The first two arcs share one sub-identifier; each is base 128, high bit set on all but its last byte.
  const out: number[] = [];
  for (const a of [40 * arcs[0] + arcs[1], ...arcs.slice(2)]) {
    const groups: number[] = [];
    for (let v = a; ; v = Math.floor(v / 128)) {
      groups.unshift(v & 0x7f);
      if (v < 128) break;
    }
    out.push(...groups.map((g, k) => (k < groups.length - 1 ? g | 0x80 : g)));
  }
  return tlv(Tag.OID, Buffer.from(out));
}

/**
 * A named-bit BIT STRING (KeyUsage): bit 0 is the most significant bit of the first byte, and
 * DER drops trailing zero bits.
 */
export function namedBits(positions: number[]): Buffer {
  if (!positions.length) return tlv(Tag.BIT_STRING, Buffer.from([0]));
  const top = Math.max(...positions);
  const bytes = Buffer.alloc(Math.floor(top / 8) + 1);
  for (const b of positions) bytes[b >> 3] |= 0x80 >> (b & 7);
  return tlv(Tag.BIT_STRING, Buffer.concat([Buffer.from([7 - (top & 7)]), bytes]));
}

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), to the second, in UTC. */
export function time(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '') + 'Z';
  const year = d.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new Error(`time out of range: ${iso}`);
  return year < 2050
    ? tlv(Tag.UTC_TIME, Buffer.from(digits.slice(2), 'latin1'))
    : tlv(Tag.GENERALIZED_TIME, Buffer.from(digits, 'latin1'));
}

/** An element read from DER: its tag, the whole element and its content. */
export interface Element {
  tag: number;
  /** The element as encoded (tag, length, content). */
  raw: Buffer;
  content: Buffer;
}

/** Reads the element at `pos` of `b`; throws on anything malformed or running past `b`. */
export function readElement(b: Buffer, pos = 0): Element {
  if (pos + 2 > b.length) throw new Error('DER: truncated');
  const tag = b[pos];
  if ((tag & 0x1f) === 0x1f) throw new Error('DER: multi-byte tags not supported');
  let len = b[pos + 1];
  let start = pos + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new Error('DER: bad length');
    if (start + n > b.length) throw new Error('DER: truncated');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[start + i];
    start += n;
  }
  const end = start + len;
  if (end > b.length) throw new Error('DER: element runs past its parent');
  return { tag, raw: b.subarray(pos, end), content: b.subarray(start, end) };
}

/** The elements inside a constructed element's content, in order. */
export function children(content: Buffer): Element[] {
  const out: Element[] = [];
  for (let pos = 0; pos < content.length;) {
    const e = readElement(content, pos);
    out.push(e);
    pos += e.raw.length;
  }
  return out;
}

/** Reads `e` expecting `tag`. */
export function expectTag(e: Element | undefined, tag: number, what: string): Element {
  if (!e || e.tag !== tag) throw new Error(`DER: expected ${what}`);
  return e;
}

/** The dotted form of an OBJECT IDENTIFIER's content. */
export function oidString(content: Buffer): string {
  if (!content.length) throw new Error('DER: empty OID');
  const arcs: number[] = [];
  let v = 0;
  for (const byte of content) {
    v = v * 128 + (byte & 0x7f);
    if (!Number.isSafeInteger(v)) throw new Error('DER: OID arc too large');
    if (!(byte & 0x80)) {
      if (!arcs.length) arcs.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else arcs.push(v);
      v = 0;
    }
  }
  return arcs.join('.');
}

/** The text of a directory string (UTF8, Printable, IA5, T61 or BMP). */
export function directoryString(e: Element): string {
  switch (e.tag) {
    case Tag.UTF8_STRING:
      return e.content.toString('utf8');
    case Tag.PRINTABLE_STRING:
    case Tag.IA5_STRING:
    case Tag.T61_STRING:
      return e.content.toString('latin1');
    case Tag.BMP_STRING:
      return Buffer.from(e.content).swap16().toString('utf16le');
    default:
      throw new Error('DER: not a directory string');
  }
}

/** PEM armour of `der` with `label`, 64 columns. */
export function toPem(label: string, der: Buffer): string {
  const b64 = der.toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

const PEM_BLOCK = /-----BEGIN ([^\r\n-]*)-----\r?\n([\s\S]*?)-----END \1-----/g;

/**
 * The DER of every PEM block in `pem`, in order, whatever its label, as Go's pem.Decode reads them one after another:
 * `Key: value` headers up to a blank line are skipped, so is what lies between blocks, and a block whose body is not
 * base64 ends the reading.
 */
export function allFromPem(pem: string): Buffer[] {
  const out: Buffer[] = [];
  for (const [, , body] of pem.matchAll(PEM_BLOCK)) {
    const lines = body.split(/\r?\n/);
    const blank = lines.findIndex((line) => line.trim() === '');
    const base64 = (lines[0]?.includes(':') && blank > 0 ? lines.slice(blank + 1) : lines).join('').replace(/\s/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) break;
    out.push(Buffer.from(base64, 'base64'));
  }
  return out;
}

/** The DER of the first PEM block labelled `label` in `pem`. */
export function fromPem(label: string, pem: string): Buffer {
  const m = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]*?)-----END ${label}-----`).exec(pem);
  if (!m) throw new Error(`no ${label} PEM block`);
  return Buffer.from(m[1].replace(/\s+/g, ''), 'base64');
}
