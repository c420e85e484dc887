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

import { encodeVarint, field, readField } from './wire.js';

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
    if (!readField(m, pos)) return undefined;
    // Taken before a nested prune reads fields of its own.
    const { tag, tagEnd, valueStart, end } = field;
    pos = end;
    const what = node.get(tag >>> 3);
    if (what === undefined) continue;
    if (what !== true && (tag & 7) !== 2) continue;
    const inner = what === true ? undefined : prune(m.subarray(valueStart, end), what);
    if (what !== true && !inner) continue;
    // Copy what came before this field, then the field rewritten (or nothing).
    parts.push(m.subarray(copyFrom, start));
    if (inner) parts.push(m.subarray(start, tagEnd), encodeVarint(inner.length), inner);
    copyFrom = end;
    changed = true;
  }
  if (!changed) return undefined;
  parts.push(m.subarray(copyFrom));
  return Buffer.concat(parts);
}
