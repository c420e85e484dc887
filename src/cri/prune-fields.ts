/**
 * Removes fields from a protobuf message's bytes before it is decoded, for answers the kubelet
 * reads only in part. ListPodSandboxStats carries every container's stats again inside each
 * sandbox's, with every label and annotation; decoding them to drop them was most of the stats
 * collector's CPU under V8's interpreter (bin/tskubelet.js runs with --lite-mode).
 *
 * A path names fields from the top: [1, 2, 5] removes field 5 of every field 2 of every field 1.
 * Only the messages on a path are walked (field by field, never byte by byte); the rest is copied
 * as it is. Bytes it cannot walk are returned unchanged, for the decoder to judge.
 */

/** Fields to remove (true) or to walk into, by field number. */
type Prune = Map<number, Prune | true>;

/** A function that removes `paths` from a message's bytes (the bytes themselves when nothing is removed). */
export function fieldPruner(paths: number[][]): (b: Buffer) => Buffer {
  const root: Prune = new Map();
  for (const p of paths) {
    let node = root;
    p.forEach((f, i) => {
      if (i === p.length - 1) node.set(f, true);
      else {
        const next = node.get(f);
        const child = next instanceof Map ? next : new Map<number, Prune | true>();
        node.set(f, child);
        node = child;
      }
    });
  }
  return (b) => prune(b, root) ?? b;
}

/** `m` without the fields of `node`; undefined when nothing changed or `m` cannot be walked. */
function prune(m: Buffer, node: Prune): Buffer | undefined {
  const parts: Buffer[] = [];
  let changed = false;
  let copyFrom = 0;
  for (let pos = 0; pos < m.length;) {
    const start = pos;
    const tag = varint(m, pos);
    if (tag < 0) return undefined;
    pos = varintEnd;
    const tagEnd = pos;
    const wire = tag & 7;
    let bodyStart = pos;
    switch (wire) {
      case 0:
        while (pos < m.length && m[pos] & 0x80) pos++;
        pos++;
        break;
      case 1:
        pos += 8;
        break;
      case 2: {
        const len = varint(m, pos);
        if (len < 0) return undefined;
        bodyStart = varintEnd;
        pos = varintEnd + len;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        return undefined;
    }
    if (pos > m.length) return undefined;
    const what = node.get(tag >>> 3);
    if (what === undefined) continue;
    if (what !== true && wire !== 2) continue;
    const inner = what === true ? undefined : prune(m.subarray(bodyStart, pos), what);
    if (what !== true && !inner) continue;
    // Copy what came before this field, then the field rewritten (or nothing).
    parts.push(m.subarray(copyFrom, start));
    if (inner) parts.push(m.subarray(start, tagEnd), encodeVarint(inner.length), inner);
    copyFrom = pos;
    changed = true;
  }
  if (!changed) return undefined;
  parts.push(m.subarray(copyFrom));
  return Buffer.concat(parts);
}

/** Where the last varint read ended. */
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

function encodeVarint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
