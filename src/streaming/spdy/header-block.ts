/**
 * SPDY/3 name/value header blocks: the plain layout (count, then length-prefixed names and
 * values; several values of one name joined by NUL) and the per-connection zlib contexts — one
 * deflate for what we send and one inflate for what we receive, both seeded with the SPDY/3
 * dictionary and flushed with Z_SYNC_FLUSH after every block, as the protocol requires.
 */
import zlib from 'node:zlib';
import { spdy3Dictionary } from './dictionary.js';

/** Header names (lower case) → values. */
export type HeaderMap = Map<string, string[]>;

/** Encodes headers into the plain block layout. Names are lower-cased as SPDY/3 requires. */
export function encodeNameValues(headers: Iterable<[string, string | string[]]>): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  const u32 = (x: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(x); return b; };
  for (const [name, value] of headers) {
    const k = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from([value].flat().join('\0'), 'utf8');
    parts.push(u32(k.length), k, u32(v.length), v);
    n++;
  }
  return Buffer.concat([u32(n), ...parts]);
}

/** Decodes a plain block; throws with a reason on a malformed one. */
export function decodeNameValues(b: Buffer): HeaderMap {
  const out: HeaderMap = new Map();
  if (b.length < 4) throw new Error('header block shorter than its count');
  const n = b.readUInt32BE(0);
  let off = 4;
  const take = (what: string): string => {
    if (off + 4 > b.length) throw new Error(`header block truncated in a ${what} length`);
    const len = b.readUInt32BE(off);
    off += 4;
    if (off + len > b.length) throw new Error(`header block truncated in a ${what}`);
    const s = b.subarray(off, off + len).toString('utf8');
    off += len;
    return s;
  };
  for (let i = 0; i < n; i++) {
    const name = take('name');
    if (!name) throw new Error('empty header name');
    if (out.has(name)) throw new Error(`duplicate header name "${name}"`);
    out.set(name, take('value').split('\0'));
  }
  return out;
}

/** One direction's zlib context; `process` calls run strictly in order. */
class ZlibContext {
  private chain: Promise<unknown> = Promise.resolve();
  constructor(private readonly z: zlib.Deflate | zlib.Inflate) { z.on('error', () => undefined); }

  process(input: Buffer): Promise<Buffer> {
    const run = () => new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const onData = (c: Buffer) => chunks.push(c);
      const onError = (e: Error) => { cleanup(); reject(e); };
      const cleanup = () => { this.z.off('data', onData); this.z.off('error', onError); };
      this.z.on('data', onData);
      this.z.once('error', onError);
      this.z.write(input);
      this.z.flush(zlib.constants.Z_SYNC_FLUSH, () => { cleanup(); resolve(Buffer.concat(chunks)); });
    });
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  close(): void { this.z.close(); }
}

/** The compression state of one SPDY connection. */
export class HeaderCodec {
  private readonly deflate = new ZlibContext(zlib.createDeflate({ dictionary: spdy3Dictionary }));
  private readonly inflate = new ZlibContext(zlib.createInflate({ dictionary: spdy3Dictionary }));

  /** Compresses headers for a SYN_STREAM / SYN_REPLY / HEADERS frame we send. */
  async compress(headers: Iterable<[string, string | string[]]>): Promise<Buffer> {
    return this.deflate.process(encodeNameValues(headers));
  }

  /** Decompresses and decodes a received block; rejects on corrupt input (a connection error). */
  async decompress(block: Buffer): Promise<HeaderMap> {
    return decodeNameValues(await this.inflate.process(block));
  }

  /** Releases the zlib contexts. */
  close(): void { this.deflate.close(); this.inflate.close(); }
}
