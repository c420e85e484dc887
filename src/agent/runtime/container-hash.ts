/**
 * `io.kubernetes.container.hash` exactly as the Go kubelet (v1.31 and later) computes it
 * (HashContainer), so that a container one kubelet started is not seen as changed by the other:
 * FNV-32a over go-spew's `%#v` print of the JSON of the container's name and image (the only
 * fields whose change replaces a running container; the rest of a pod's spec is immutable or
 * resized in place), written in hexadecimal without padding. The go-spew print of a []byte is
 * `([]uint8)[b0 b1 …]`, each byte in decimal.
 */
import { createHash } from 'node:crypto';
import type { Container } from '../../api/types.js';
import { stableJson } from '../podconfig/static-pod.js';
import { fnv32a } from '../../lib/fnv32a.js';

/** A string as Go's encoding/json writes it: JSON with <, >, & and U+2028/U+2029 escaped. Pure. */
export function goJsonString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Upstream HashContainer, as its annotation holds it (strconv.FormatUint(hash, 16)). Pure. */
export function containerHash(c: Container): string {
  // json.Marshal of map[string]string{"name", "image"}: keys sorted.
  const json = Buffer.from(`{"image":${goJsonString(c.image ?? '')},"name":${goJsonString(c.name)}}`, 'utf8');
  const printed = `([]uint8)[${[...json].join(' ')}]`;
  return fnv32a(Buffer.from(printed, 'utf8')).toString(16);
}

/**
 * The hash tskubelet wrote before it computed upstream's (a sha256 of the whole container spec,
 * keys sorted): containers a tskubelet of that time started are still running on upgraded nodes,
 * and are not restarted for it. Pure.
 */
export function legacyContainerHash(c: Container): string {
  return createHash('sha256').update(stableJson(c)).digest('hex').slice(0, 8);
}

/**
 * Whether a running container's hash annotation says it was made from `c` (upstream's hash, or the legacy one). Pure.
 */
export function sameContainerSpec(c: Container, hash: string): boolean {
  return hash === containerHash(c) || hash === legacyContainerHash(c);
}
