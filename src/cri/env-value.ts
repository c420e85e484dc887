/**
 * CRI's env value (KeyValue.value): `bytes` on the wire since cri-api v1.36.2 (kubernetes/kubernetes#139168), so that a
 * Secret's value that is not UTF-8 reaches the runtime as it is. Pure.
 */

/** A value as text: bytes read as UTF-8 (for $(VAR) references, and a process's environment, which is text). */
export function envValueText(value: string | Uint8Array): string {
  return typeof value === 'string' ? value : Buffer.from(value).toString('utf8');
}

/** A value as the bytes the wire carries: text as UTF-8 (the proto encoder would read a string there as base64). */
export function envValueBytes(value: string | Uint8Array): Uint8Array {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}
