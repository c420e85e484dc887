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
 * the relist. With stock V8, proto-loader's decoders in place of this one and stats-wire.ts cost
 * the idle kubelet about a third more CPU at 100 pods (docs/performance-history.md, 29 November).
 * The decoded items are frozen: they are shared between answers, so nobody may change them (and
 * in strict mode trying to throws). So is the list: when no item is new, changed or gone, the
 * answer is the very array of the last one (items in its order: Go lists from a map, in a new
 * order each time), which tells a reader that nothing changed without looking (the PLEG's relist).
 *
 * The response must be `repeated Item = 1` and nothing else, and each item must begin with its id
 * (field 1, as protobuf encoders write fields in order); anything else is decoded in full.
 */

import { field, latin1, readField, varint, varintEnd } from './wire.js';

/**
 * What is remembered of an item: its decoded object, its length and the bytes of its fields
 * before its maps, as a latin1 string (one native slice and a string comparison cost a sixth of
 * `Buffer.compare`'s argument checks under the interpreter).
 */
interface Known {
  item: unknown;
  length: number;
  head: string;
}

/**
 * A deserializer for a list response whose unchanged items keep their identity. `firstMapField`
 * is the number of the item's first map field (PodSandbox and Container: labels).
 */
export function reusingListDecoder(
  decode: (b: Buffer) => unknown,
  field: string,
  firstMapField: number,
): (b: Buffer) => unknown {
  let last = new Map<string, Known>();
  let lastItems: readonly unknown[] = Object.freeze([]);
  return (b: Buffer) => {
    if (!isItemList(b)) return decode(b);
    const next = new Map<string, Known>();
    const items: unknown[] = [];
    let reused = 0;
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
        reused++;
        continue;
      }
      // The item with its tag and length is itself a one-item response.
      const item = deepFreeze((decode(b.subarray(start, end)) as Record<string, unknown[]>)[field][0]);
      const headEnd = fieldsBefore(b, bodyStart, end, firstMapField);
      if (id !== undefined && headEnd >= 0) next.set(id, { item, length: len, head: latin1(b, bodyStart, headEnd) });
      items.push(item);
    }
    // Nothing new, changed or gone (the same ids, each once): the last answer's array, whatever the order.
    const same = reused === items.length && next.size === items.length && items.length === lastItems.length;
    last = next;
    if (!same) lastItems = Object.freeze(items);
    return { [field]: lastItems };
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

/**
 * Whether the item in b[start, end) is `known`: the same length, the same bytes before its maps, and a map field (or
 * nothing) after them.
 */
function sameItem(known: Known, b: Buffer, start: number, end: number, firstMapField: number): boolean {
  const headEnd = start + known.head.length;
  if (end - start !== known.length || latin1(b, start, headEnd) !== known.head) return false;
  // The next field is a map or comes after them (single-byte tags: field numbers below 16).
  return headEnd === end || b[headEnd] >> 3 >= firstMapField;
}

/** Where the first field numbered `fieldNo` or higher begins in the message b[from, to) (or `to`); -1 if malformed. */
function fieldsBefore(m: Buffer, from: number, to: number, fieldNo: number): number {
  for (let pos = from; pos < to;) {
    const tag = varint(m, pos, to);
    if (tag < 0 || tag >= 128) return -1;
    if (tag >> 3 >= fieldNo) return pos;
    if (!readField(m, pos, to)) return -1;
    pos = field.end;
  }
  return to;
}

/** The string of field 1 when the message in b[from, to) begins with it. */
function leadingId(b: Buffer, from: number, to: number): string | undefined {
  if (b[from] !== 0x0a) return undefined;
  const len = varint(b, from + 1, to);
  if (len < 0 || varintEnd + len > to) return undefined;
  return latin1(b, varintEnd, varintEnd + len);
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}
