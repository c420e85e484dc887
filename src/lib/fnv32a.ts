/**
 * FNV-1a, 32 bits: the hash behind upstream's container hash and every checkpoint checksum
 * (checkpointmanager/checksum hashes go-spew's print of the checkpoint). Pure.
 */
export function fnv32a(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const b of bytes) hash = Math.imul(hash ^ b, 0x01000193) >>> 0;
  return hash;
}
