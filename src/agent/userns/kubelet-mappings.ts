/**
 * The host IDs the kubelet may give pods' user namespaces (upstream getKubeletMappings): the
 * subordinate ID range of the `kubelet` user when the node has one (`getsubids kubelet` and
 * `getsubids -g kubelet`, one range, the same for users and groups), else every ID from one
 * pod's range up — never the host's first 65536 IDs, where root and the system users are.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface IdRange {
  firstId: number;
  length: number;
}

const MAX_ID = 2 ** 32;

/** The whole ID space above the first `idsPerPod` IDs, in whole pod ranges (upstream's default mapping). */
export const defaultKubeletMapping = (idsPerPod: number): IdRange => ({
  firstId: idsPerPod,
  length: Math.floor((MAX_ID - idsPerPod) / idsPerPod) * idsPerPod,
});

/** getsubids' line (`0: kubelet 65536 2147483648`) as a range; throws upstream's message for another shape. */
export function parseGetSubIds(output: string): IdRange {
  const lines = output.replace(/^\n+|\n+$/g, '').split('\n');
  if (lines.length !== 1)
    throw new Error(`error parsing line ${JSON.stringify(output)}: it must contain only one line`);
  const parts = lines[0].trim().split(/\s+/);
  if (parts.length !== 4) throw new Error(`invalid line ${JSON.stringify(output)}`);
  const [firstId, length] = [parts[2], parts[3]].map((p) => (/^\d+$/.test(p) ? Number(p) : NaN));
  if (![firstId, length].every((n) => Number.isSafeInteger(n) && n < MAX_ID))
    throw new Error(`error parsing line ${JSON.stringify(output)}: invalid syntax`);
  return { firstId, length };
}

/** Whether /etc/passwd (or `passwdFile`) names a user `name`. */
function userExists(name: string, passwdFile: string): boolean {
  try {
    return readFileSync(passwdFile, 'utf8')
      .split('\n')
      .some((line) => line.split(':')[0] === name);
  } catch {
    return false;
  }
}

/**
 * The kubelet's range: the `kubelet` user's subordinate IDs through `getsubids` (from the uidmap
 * package), the default without that user or that tool. Throws upstream's messages when the tool
 * fails or the user and group ranges differ.
 */
export function kubeletMapping(
  idsPerPod: number,
  o: { passwdFile?: string; getsubids?: (args: string[]) => string } = {},
): IdRange {
  if (!userExists('kubelet', o.passwdFile ?? '/etc/passwd')) return defaultKubeletMapping(idsPerPod);
  const run =
    o.getsubids ??
    ((args: string[]) => execFileSync('getsubids', args, { encoding: 'utf8', timeout: 10_000, maxBuffer: 64 * 1024 }));
  let uids: string;
  let gids: string;
  try {
    uids = run(['kubelet']);
  } catch (err) {
    // No getsubids on the node: the default mapping, as upstream.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return defaultKubeletMapping(idsPerPod);
    throw new Error('error retrieving additional ids for user "kubelet"', { cause: err });
  }
  try {
    gids = run(['-g', 'kubelet']);
  } catch (err) {
    throw new Error('error retrieving additional gids for user "kubelet"', { cause: err });
  }
  if (uids !== gids) throw new Error('mismatched subuids and subgids for user "kubelet"');
  return parseGetSubIds(uids);
}
