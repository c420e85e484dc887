/**
 * Decoding of unfiltered list responses (ListPodSandbox, ListContainers) that reuses the items of
 * the previous answer whose bytes have not changed.
 *
 * The PLEG lists every sandbox and container each second; on a settled node nearly every item is
 * byte for byte what it was a second ago. Decoding each one again (protobufjs, then toObject with
 * defaults) was the kubelet's largest steady allocation. Here the response is only split into its
 * items; an item whose id and bytes match the last answer's is the object decoded then, and only
 * new or changed items are decoded. The decoded items are frozen: they are shared between answers,
 * so nobody may change them (and in strict mode trying to throws).
 *
 * The response must be `repeated Item = 1` and nothing else, and each item must begin with its id
 * (field 1, as protobuf encoders write fields in order); anything else is decoded in full.
 */

/** A deserializer for a list response whose items keep their identity while their bytes do. */
export function reusingListDecoder(decode: (b: Buffer) => unknown, field: string): (b: Buffer) => unknown {
  let last = new Map<string, { bytes: Buffer; item: unknown }>();
  return (b: Buffer) => {
    const spans = itemSpans(b);
    if (!spans) return decode(b);
    const next = new Map<string, { bytes: Buffer; item: unknown }>();
    const items: unknown[] = [];
    for (const [start, bodyStart, end] of spans) {
      const body = b.subarray(bodyStart, end);
      const id = leadingId(body);
      const known = id === undefined ? undefined : last.get(id);
      if (id !== undefined && known?.bytes.equals(body)) {
        next.set(id, known);
        items.push(known.item);
        continue;
      }
      // The item with its tag and length is itself a one-item response.
      const item = deepFreeze((decode(b.subarray(start, end)) as Record<string, unknown[]>)[field][0]);
      if (id !== undefined) next.set(id, { bytes: Buffer.from(body), item });
      items.push(item);
    }
    last = next;
    return { [field]: items };
  };
}

/** [start of tag, start of item, end] of each `field 1, length-delimited` entry, or undefined if `b` holds anything else. */
export function itemSpans(b: Buffer): Array<[number, number, number]> | undefined {
  const spans: Array<[number, number, number]> = [];
  let pos = 0;
  while (pos < b.length) {
    const start = pos;
    if (b[pos++] !== 0x0a) return undefined;
    const len = varint(b, pos);
    if (!len) return undefined;
    pos = len.next;
    const end = pos + len.value;
    if (end > b.length) return undefined;
    spans.push([start, pos, end]);
    pos = end;
  }
  return spans;
}

/** The string of field 1 when the message begins with it. */
function leadingId(body: Buffer): string | undefined {
  if (body[0] !== 0x0a) return undefined;
  const len = varint(body, 1);
  if (!len || len.next + len.value > body.length) return undefined;
  return body.toString('latin1', len.next, len.next + len.value);
}

/** A varint of at most 32 bits at `pos`. */
function varint(b: Buffer, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= b.length) return undefined;
    const byte = b[pos++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return { value, next: pos };
  }
  return undefined;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}
