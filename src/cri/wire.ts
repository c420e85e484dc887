/**
 * Reading protobuf's wire format in place, for the code that looks at CRI answers before (or
 * instead of) decoding them: cri/reused-list-items.ts and cri/stats-wire.ts. Nothing allocates
 * but the strings of `latin1` and `utf8`: results are left in module state, read right after the call.
 */

/** Where the last varint read ended. */
export let varintEnd = 0;

/**
 * A varint of at most 35 bits at `pos`, before `to` (its end in varintEnd), or -1. The first 28
 * bits are put together with integer operations: `2 ** shift` boxed a heap number for every byte
 * read under V8's interpreter, the relist's largest steady allocation.
 */
export function varint(b: Buffer, pos: number, to = b.length): number {
  let value = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= to) return -1;
    const byte = b[pos++];
    value |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      varintEnd = pos;
      return value;
    }
  }
  if (pos >= to || b[pos] >= 0x80) return -1;
  varintEnd = pos + 1;
  return value + b[pos] * 2 ** 28;
}

/**
 * The field readField read: its tag, where the tag ends, where its value begins (a length-delimited one's bytes) and
 * where it ends.
 */
export const field = { tag: 0, tagEnd: 0, valueStart: 0, end: 0 };

/**
 * Reads the field at `pos` of m[.., to) into `field`; false for a group, an unknown wire type or a field that runs past
 * `to`.
 */
export function readField(m: Buffer, pos: number, to = m.length): boolean {
  const tag = varint(m, pos, to);
  if (tag < 0) return false;
  pos = varintEnd;
  field.tag = tag;
  field.tagEnd = pos;
  field.valueStart = pos;
  switch (tag & 7) {
    case 0: // a varint of up to 10 bytes (64 bits)
      while (pos < to && m[pos] & 0x80) pos++;
      pos++;
      break;
    case 1:
      pos += 8;
      break;
    case 2: {
      const len = varint(m, pos, to);
      if (len < 0) return false;
      field.valueStart = varintEnd;
      pos = varintEnd + len;
      break;
    }
    case 5:
      pos += 4;
      break;
    default:
      return false;
  }
  if (pos > to) return false;
  field.end = pos;
  return true;
}

/** A varint's bytes. */
export function encodeVarint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

type Latin1Slice = (this: Buffer, start: number, end: number) => string;
const nativeLatin1Slice = (Buffer.prototype as unknown as { latin1Slice?: Latin1Slice }).latin1Slice;

/**
 * b[start, end) as a latin1 string (one char per byte). Through Buffer's native slice where Node
 * has it: `toString`'s argument checks cost three times the copy under V8's interpreter.
 */
export const latin1: (b: Buffer, start: number, end: number) => string = nativeLatin1Slice
  ? (b, start, end) => nativeLatin1Slice.call(b, start, end)
  : (b, start, end) => b.toString('latin1', start, end);

const nativeUtf8Slice = (Buffer.prototype as unknown as { utf8Slice?: Latin1Slice }).utf8Slice;

/** b[start, end) decoded as UTF-8, through Buffer's native slice where Node has it (as latin1). */
export const utf8: (b: Buffer, start: number, end: number) => string = nativeUtf8Slice
  ? (b, start, end) => nativeUtf8Slice.call(b, start, end)
  : (b, start, end) => b.toString('utf8', start, end);
