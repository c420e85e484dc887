/**
 * Decoding of unfiltered list responses (ListPodSandbox, ListContainers) that reuses the items of
 * the previous answer that have not changed.
 *
 * The PLEG lists every sandbox and container each second; on a settled node nearly every item is
 * what it was a second ago. Decoding each one again (protobufjs, then toObject with defaults) was
 * the kubelet's largest steady allocation. Here the response is only scanned: an item whose id
 * and top-level fields match the last answer's is the object decoded then, and only new or changed
 * items are decoded. The fields are compared as a multiset, because Go writes map entries
 * (labels, annotations) in a random order on each call: for PodSandbox and Container, whose only
 * repeated fields are maps, the same multiset of fields is the same value. The comparison is
 * exact, byte for byte, and allocates nothing.
 * The decoded items are frozen: they are shared between answers, so nobody may change them (and
 * in strict mode trying to throws).
 *
 * The response must be `repeated Item = 1` and nothing else, and each item must begin with its id
 * (field 1, as protobuf encoders write fields in order); anything else is decoded in full.
 */

/**
 * What is remembered of an item: where its bytes are and the decoded object. The bytes are those
 * of the latest response that had the item (moved there on each match), so one response per list
 * is held, not a copy of each item.
 */
interface Known {
  buf: Buffer;
  start: number;
  end: number;
  item: unknown;
}

/** A deserializer for a list response whose unchanged items keep their identity. */
export function reusingListDecoder(decode: (b: Buffer) => unknown, field: string): (b: Buffer) => unknown {
  let last = new Map<string, Known>();
  return (b: Buffer) => {
    if (!isItemList(b)) return decode(b);
    const next = new Map<string, Known>();
    const items: unknown[] = [];
    for (let pos = 0; pos < b.length;) {
      const start = pos;
      const len = varint(b, pos + 1);
      const bodyStart = varintEnd;
      const end = bodyStart + len;
      pos = end;
      const id = leadingId(b, bodyStart, end);
      const known = id === undefined ? undefined : last.get(id);
      if (id !== undefined && known && sameItem(known, b, bodyStart, end)) {
        known.buf = b;
        known.start = bodyStart;
        known.end = end;
        next.set(id, known);
        items.push(known.item);
        continue;
      }
      // The item with its tag and length is itself a one-item response.
      const item = deepFreeze((decode(b.subarray(start, end)) as Record<string, unknown[]>)[field][0]);
      if (id !== undefined && scanFields(b, bodyStart, end, scratch) >= 0) next.set(id, { buf: b, start: bodyStart, end, item });
      items.push(item);
    }
    last = next;
    return { [field]: items };
  };
}

/** Whether `b` is nothing but well-formed `field 1, length-delimited` entries. */
export function isItemList(b: Buffer): boolean {
  for (let pos = 0; pos < b.length;) {
    if (b[pos] !== 0x0a) return false;
    const len = varint(b, pos + 1);
    if (len < 0) return false;
    pos = varintEnd + len;
    if (pos > b.length) return false;
  }
  return true;
}

/** Where scanned fields are: field i spans [starts[i], ends[i]). */
interface FieldSpans {
  starts: Int32Array;
  ends: Int32Array;
}

// Scratch space of the field scans, for an answer's item and the remembered one (grown as needed;
// the decoder runs on one thread, one item at a time).
const scratch: FieldSpans = { starts: new Int32Array(64), ends: new Int32Array(64) };
const scratchKnown: FieldSpans = { starts: new Int32Array(64), ends: new Int32Array(64) };
let scratchUsed = new Uint8Array(64);

/** Scans the top-level fields of the message in m[from, to) into `into`; their count, or -1 for a group or a malformed message. */
function scanFields(m: Buffer, from: number, to: number, into: FieldSpans): number {
  let n = 0;
  for (let pos = from; pos < to;) {
    const start = pos;
    const tag = varint(m, pos, to);
    if (tag < 0) return -1;
    pos = varintEnd;
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
        if (len < 0) return -1;
        pos = varintEnd + len;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        return -1;
    }
    if (pos > to) return -1;
    if (n === into.starts.length) grow(into);
    into.starts[n] = start;
    into.ends[n] = pos;
    n++;
  }
  return n;
}

function grow(s: FieldSpans): void {
  const bigger = (a: Int32Array) => {
    const x = new Int32Array(a.length * 2);
    x.set(a);
    return x;
  };
  s.starts = bigger(s.starts);
  s.ends = bigger(s.ends);
  if (scratchUsed.length < s.starts.length) scratchUsed = new Uint8Array(s.starts.length);
}

/** Whether the item in b[start, end) holds the same multiset of top-level fields as `known`. Exact. */
export function sameItem(known: Known, b: Buffer, start: number, end: number): boolean {
  if (known.end - known.start !== end - start) return false;
  if (b.compare(known.buf, known.start, known.end, start, end) === 0) return true;
  const n = scanFields(b, start, end, scratch);
  if (n < 0 || scanFields(known.buf, known.start, known.end, scratchKnown) !== n) return false;
  scratchUsed.fill(0, 0, n);
  for (let i = 0; i < n; i++) {
    const len = scratch.ends[i] - scratch.starts[i];
    // Its partner is most often at the same place (only map entries move); then anywhere unused.
    let found = -1;
    for (let t = 0; t < n && found < 0; t++) {
      const j = (i + t) % n;
      const ks = scratchKnown.starts[j];
      if (!scratchUsed[j] && scratchKnown.ends[j] - ks === len && rangesEqual(b, scratch.starts[i], known.buf, ks, len)) found = j;
    }
    if (found < 0) return false;
    scratchUsed[found] = 1;
  }
  return true;
}

function rangesEqual(a: Buffer, as: number, b: Buffer, bs: number, len: number): boolean {
  // From the end: map entries share key prefixes, and their values differ first.
  for (let k = len - 1; k >= 0; k--) if (a[as + k] !== b[bs + k]) return false;
  return true;
}

/** The string of field 1 when the message in b[from, to) begins with it. */
function leadingId(b: Buffer, from: number, to: number): string | undefined {
  if (b[from] !== 0x0a) return undefined;
  const len = varint(b, from + 1, to);
  if (len < 0 || varintEnd + len > to) return undefined;
  return b.toString('latin1', varintEnd, varintEnd + len);
}

/** Where the last varint read ended (so that reading one allocates nothing). */
let varintEnd = 0;

/** A varint of at most 35 bits at `pos`, before `to` (its end in varintEnd), or -1. */
function varint(b: Buffer, pos: number, to = b.length): number {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= to) return -1;
    const byte = b[pos++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) {
      varintEnd = pos;
      return value;
    }
  }
  return -1;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}
