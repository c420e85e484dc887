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

/** What is remembered of an item: its bytes, where its fields are, and the decoded object. */
interface Known {
  bytes: Buffer;
  /** Field i spans bytes [fields[2i], fields[2i + 1]). */
  fields: Int32Array;
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
      const body = b.subarray(bodyStart, end);
      const id = leadingId(body);
      const known = id === undefined ? undefined : last.get(id);
      if (id !== undefined && known && sameItem(known, body)) {
        next.set(id, known);
        items.push(known.item);
        continue;
      }
      // The item with its tag and length is itself a one-item response.
      const item = deepFreeze((decode(b.subarray(start, end)) as Record<string, unknown[]>)[field][0]);
      if (id !== undefined) {
        const remembered = remember(body, item);
        if (remembered) next.set(id, remembered);
      }
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

// Scratch space of the field scan (grown as needed; the decoder runs on one thread, one item at a time).
let scratchStarts = new Int32Array(64);
let scratchEnds = new Int32Array(64);
let scratchUsed = new Uint8Array(64);

/** Scans the top-level fields of `m` into the scratch arrays; their count, or -1 for a group or a malformed message. */
export function scanFields(m: Buffer): number {
  let n = 0;
  for (let pos = 0; pos < m.length;) {
    const start = pos;
    const tag = varint(m, pos);
    if (tag < 0) return -1;
    pos = varintEnd;
    switch (tag & 7) {
      case 0: // a varint of up to 10 bytes (64 bits)
        while (pos < m.length && m[pos] & 0x80) pos++;
        pos++;
        break;
      case 1:
        pos += 8;
        break;
      case 2: {
        const len = varint(m, pos);
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
    if (pos > m.length) return -1;
    if (n === scratchStarts.length) grow();
    scratchStarts[n] = start;
    scratchEnds[n] = pos;
    n++;
  }
  return n;
}

function grow(): void {
  const size = scratchStarts.length * 2;
  const bigger = (a: Int32Array) => {
    const x = new Int32Array(size);
    x.set(a);
    return x;
  };
  scratchStarts = bigger(scratchStarts);
  scratchEnds = bigger(scratchEnds);
  scratchUsed = new Uint8Array(size);
}

/** The first `n` scanned fields as one array of [start, end) pairs. */
function interleave(n: number): Int32Array {
  const fields = new Int32Array(2 * n);
  for (let i = 0; i < n; i++) {
    fields[2 * i] = scratchStarts[i];
    fields[2 * i + 1] = scratchEnds[i];
  }
  return fields;
}

/** What to remember of a freshly decoded item, or undefined when its fields cannot be scanned. */
function remember(body: Buffer, item: unknown): Known | undefined {
  const n = scanFields(body);
  if (n < 0) return undefined;
  return {
    bytes: Buffer.from(body),
    fields: interleave(n),
    item,
  };
}

/** Whether `body` holds the same multiset of top-level fields as `known`. Exact. */
export function sameItem(known: Known, body: Buffer): boolean {
  if (known.bytes.length !== body.length) return false;
  if (known.bytes.equals(body)) return true;
  const n = scanFields(body);
  if (n * 2 !== known.fields.length) return false;
  scratchUsed.fill(0, 0, n);
  for (let i = 0; i < n; i++) {
    const len = scratchEnds[i] - scratchStarts[i];
    // Its partner is most often at the same place (only map entries move); then anywhere unused.
    let found = -1;
    for (let t = 0; t < n && found < 0; t++) {
      const j = (i + t) % n;
      const start = known.fields[2 * j];
      if (!scratchUsed[j] && known.fields[2 * j + 1] - start === len && rangesEqual(body, scratchStarts[i], known.bytes, start, len)) found = j;
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

/** The string of field 1 when the message begins with it. */
function leadingId(body: Buffer): string | undefined {
  if (body[0] !== 0x0a) return undefined;
  const len = varint(body, 1);
  if (len < 0 || varintEnd + len > body.length) return undefined;
  return body.toString('latin1', varintEnd, varintEnd + len);
}

/** Where the last varint read ended (so that reading one allocates nothing). */
let varintEnd = 0;

/** A varint of at most 35 bits at `pos` (its end in varintEnd), or -1. */
function varint(b: Buffer, pos: number): number {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= b.length) return -1;
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
