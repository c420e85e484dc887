/**
 * SPDY/3 name/value header blocks: the plain layout (count, then length-prefixed names and
 * values; several values of one name joined by NUL) and the per-connection zlib streams, one per
 * direction, both with the SPDY/3 dictionary, each block ending on a sync-flush boundary.
 */
import zlib from 'node:zlib';
import { spdy3Dictionary } from './dictionary.js';

/** Header names (lower case) → values. */
export type HeaderMap = Map<string, string[]>;

/** Encodes headers into the plain block layout. Names are lower-cased as SPDY/3 requires. */
export function encodeNameValues(headers: Iterable<[string, string | string[]]>): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  const u32 = (x: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(x);
    return b;
  };
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

/**
 * Our outgoing zlib stream, written without compression: a zlib header naming the SPDY/3
 * dictionary (FDICT, DICTID = adler32 of it), then each header block as stored deflate blocks
 * followed by the empty stored block that Z_SYNC_FLUSH writes; any inflater seeded with the
 * dictionary reads the stream. Synchronous: a frame's header block exists the
 * moment the frame is queued, so frames keep their order.
 */
class StoredDeflate {
  private started = false;

  process(input: Buffer): Buffer {
    const parts: Buffer[] = [];
    if (!this.started) {
      this.started = true;
      const cmf = 0x78;
      let flg = 0x20; // FDICT, level bits 0
      flg += 31 - ((cmf * 256 + flg) % 31);
      const dictId = Buffer.alloc(4);
      dictId.writeUInt32BE(adler32(spdy3Dictionary));
      parts.push(Buffer.from([cmf, flg]), dictId);
    }
    const stored = (chunk: Buffer) => {
      const h = Buffer.alloc(5);
      h[0] = 0x00; // BFINAL=0, BTYPE=00 (stored), padded to the byte
      h.writeUInt16LE(chunk.length, 1);
      h.writeUInt16LE(~chunk.length & 0xffff, 3);
      parts.push(h, chunk);
    };
    for (let off = 0; off < input.length; off += 0xffff) stored(input.subarray(off, off + 0xffff));
    // The sync-flush marker (an empty stored block), exactly as zlib's Z_SYNC_FLUSH ends: some
    // inflaters (Go's compress/flate) hand the block's bytes over only when they reach it.
    stored(Buffer.alloc(0));
    return Buffer.concat(parts);
  }
}

/** adler32 (RFC 1950). */
export function adler32(b: Buffer): number {
  let a = 1;
  let c = 0;
  for (const x of b) {
    a = (a + x) % 65521;
    c = (c + a) % 65521;
  }
  return ((c << 16) | a) >>> 0;
}

/**
 * The largest header block a peer may send, inflated (its compressed size is bounded by the frame
 * size; a few kilobytes of deflate can otherwise inflate to hundreds of megabytes). A block over
 * it fails the connection.
 */
export const MAX_HEADER_BLOCK_BYTES = 1 << 20;

/**
 * The peer's zlib stream, inflated in order. Output is collected by one persistent listener and
 * handed over a turn after each Z_SYNC_FLUSH completes, once everything it produced has been
 * emitted.
 */
class OrderedInflate {
  private readonly z = zlib.createInflate({ dictionary: spdy3Dictionary });
  private chain: Promise<unknown> = Promise.resolve();
  private out: Buffer[] = [];
  private outBytes = 0;
  private error: Error | undefined;

  constructor() {
    this.z.on('data', (c: Buffer) => {
      this.outBytes += c.length;
      // Inflation stops there: nothing more of the block is made or kept.
      if (this.outBytes > MAX_HEADER_BLOCK_BYTES)
        this.z.destroy(new Error(`header block inflates to more than ${MAX_HEADER_BLOCK_BYTES} bytes`));
      else this.out.push(c);
    });
    this.z.on('error', (e: Error) => {
      this.error = e;
    });
  }

  process(input: Buffer): Promise<Buffer> {
    const run = () =>
      new Promise<Buffer>((resolve, reject) => {
        if (this.error) return reject(this.error);
        // A corrupt stream errors instead of calling the flush callback.
        const onError = (e: Error) => reject(e);
        this.z.once('error', onError);
        this.z.write(input);
        this.z.flush(zlib.constants.Z_SYNC_FLUSH, () =>
          setImmediate(() => {
            this.z.off('error', onError);
            if (this.error) return reject(this.error);
            const b = Buffer.concat(this.out);
            this.out = [];
            this.outBytes = 0;
            resolve(b);
          }),
        );
      });
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  close(): void {
    this.z.close();
  }
}

/** The compression state of one SPDY connection. */
export class HeaderCodec {
  private readonly deflate = new StoredDeflate();
  private readonly inflate = new OrderedInflate();

  /** The header block for a SYN_STREAM / SYN_REPLY / HEADERS frame we send (synchronous). */
  compress(headers: Iterable<[string, string | string[]]>): Buffer {
    return this.deflate.process(encodeNameValues(headers));
  }

  /** Inflates and decodes a received block, in arrival order; rejects on corrupt input. */
  async decompress(block: Buffer): Promise<HeaderMap> {
    return decodeNameValues(await this.inflate.process(block));
  }

  /** Releases the zlib context. */
  close(): void {
    this.inflate.close();
  }
}
