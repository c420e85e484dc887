/** Whether this process's OpenSSL knows a key exchange group (it refuses a context that names one it lacks). */
import { createSecureContext } from 'node:tls';

const known = new Map<string, boolean>();

/** True when `group` can be used in `ecdhCurve`. */
export function opensslHasGroup(group: string): boolean {
  let has = known.get(group);
  if (has === undefined) {
    try {
      createSecureContext({ ecdhCurve: group });
      has = true;
    } catch {
      has = false;
    }
    known.set(group, has);
  }
  return has;
}
