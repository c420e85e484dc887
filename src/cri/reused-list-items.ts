/**
 * Decoding of unfiltered list responses (ListPodSandbox, ListContainers) that reuses the items of
 * the previous answer that have not changed.
 *
 * The PLEG lists every sandbox and container each second; on a settled node nearly every item is
 * what it was a second ago. Decoding each one again (protobufjs, then toObject with defaults) was
 * the kubelet's largest steady allocation. Here the response is only scanned, and only new or
 * changed items are decoded: an item is the object decoded last time when its id, its length and
 * every byte of its fields before its maps (labels, annotations) are those of the last answer.
 * Those fields hold everything about a sandbox or container that can change (its state, the one
 * field CRI changes after creation). Its maps and the fields after them are not compared byte for
 * byte: Go writes map entries in a random order on each call, CRI has no way to change them after
 * creation, and comparing them as multisets cost the kubelet's steady CPU more than the rest of
 * the relist under V8's interpreter (bin/tskubelet.js runs with --lite-mode).
 * The decoded items are frozen: they are shared between answers, so nobody may change them (and
 * in strict mode trying to throws).
 *
 * The response must be `repeated Item = 1` and nothing else, and each item must begin with its id
 * (field 1, as protobuf encoders write fields in order); anything else is decoded in full.
 */

/** What is remembered of an item: its decoded object, its length and the bytes of its fields before its maps. */
interface Known {
  item: unknown;
  length: number;
  head: Buffer;
}

/**
 * A deserializer for a list response whose unchanged items keep their identity. `firstMapField`
 * is the number of the item's first map field (PodSandbox and Container: labels).
 */
export function reusingListDecoder(decode: (b: Buffer) => unknown, field: string, firstMapField: number): (b: Buffer) => unknown {
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
      if (id !== undefined && known && sameItem(known, b, bodyStart, end, firstMapField)) {
        next.set(id, known);
        items.push(known.item);
        continue;
      }
      // The item with its tag and length is itself a one-item response.
      const item = deepFreeze((decode(b.subarray(start, end)) as Record<string, unknown[]>)[field][0]);
      const headEnd = fieldsBefore(b, bodyStart, end, firstMapField);
      if (id !== undefined && headEnd >= 0) next.set(id, { item, length: len, head: Buffer.from(b.subarray(bodyStart, headEnd)) });
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

/** Whether the item in b[start, end) is `known`: the same length, the same bytes before its maps, and a map field (or nothing) after them. */
function sameItem(known: Known, b: Buffer, start: number, end: number, firstMapField: number): boolean {
  const headEnd = start + known.head.length;
  if (end - start !== known.length || b.compare(known.head, 0, known.head.length, start, headEnd) !== 0) return false;
  // The next field is a map or comes after them (single-byte tags: field numbers below 16).
  return headEnd === end || b[headEnd] >> 3 >= firstMapField;
}

/** Where the first field numbered `fieldNo` or higher begins in the message b[from, to) (or `to`); -1 if malformed. */
function fieldsBefore(m: Buffer, from: number, to: number, fieldNo: number): number {
  for (let pos = from; pos < to;) {
    const tag = varint(m, pos, to);
    if (tag < 0 || tag >= 128) return -1;
    if (tag >> 3 >= fieldNo) return pos;
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
  }
  return to;
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
