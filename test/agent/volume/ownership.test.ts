/**
 * fsGroup ownership as upstream's SetVolumeOwnership: every file gets the group and its bits; with the pod's
 * `fsGroupChangePolicy: OnRootMismatch` a root that already shows them skips the walk (a file inside keeps its own
 * group), one that does not is walked; `Always` (the default) always walks. Run as root (CI is), else skipped.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  fsGroupChangePolicyOf,
  requiresPermissionChange,
  setVolumeOwnership,
} from '../../../src/agent/volume/ownership.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-owner-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const FS_GROUP = 4321;

/** A volume whose root already has the fsGroup's ownership (group, 2770) and a file inside owned by group 0. */
function preparedVolume(name: string): { root: string; inner: string } {
  const root = join(base, name);
  mkdirSync(root);
  const inner = join(root, 'data');
  writeFileSync(inner, 'x');
  chownSync(inner, 0, 0);
  chmodSync(inner, 0o600);
  chownSync(root, 0, FS_GROUP);
  chmodSync(root, 0o2770);
  return { root, inner };
}

describe('requiresPermissionChange', () => {
  it.each([
    [{ gid: FS_GROUP, mode: 0o2770, isDirectory: true }, false, false],
    [{ gid: FS_GROUP, mode: 0o2775, isDirectory: true }, false, false],
    [{ gid: 0, mode: 0o2770, isDirectory: true }, false, true],
    [{ gid: FS_GROUP, mode: 0o0770, isDirectory: true }, false, true],
    [{ gid: FS_GROUP, mode: 0o2750, isDirectory: true }, false, true],
    [{ gid: FS_GROUP, mode: 0o2550, isDirectory: true }, true, false],
    [{ gid: FS_GROUP, mode: 0o2770, isDirectory: false }, false, true],
  ])('%o read-only %s: %s', (root, readOnly, want) =>
    expect(requiresPermissionChange(root, FS_GROUP, readOnly)).toBe(want),
  );

  it("reads the pod's policy, unset when it names none or an unknown one", () => {
    const pod = (securityContext: Record<string, unknown>) => ({
      metadata: {},
      spec: { containers: [], securityContext },
    });
    expect(fsGroupChangePolicyOf(pod({ fsGroupChangePolicy: 'OnRootMismatch' }))).toBe('OnRootMismatch');
    expect(fsGroupChangePolicyOf(pod({ fsGroupChangePolicy: 'Always' }))).toBe('Always');
    expect(fsGroupChangePolicyOf(pod({}))).toBeUndefined();
  });
});

describe.runIf(process.getuid?.() === 0)('setVolumeOwnership', () => {
  it('OnRootMismatch: a root that shows the ownership already is not walked', async () => {
    const { root, inner } = preparedVolume('skip');
    await setVolumeOwnership(root, FS_GROUP, false, 'OnRootMismatch');
    expect(statSync(inner).gid).toBe(0);
    expect(statSync(inner).mode & 0o777).toBe(0o600);
  });

  it('OnRootMismatch: a root that does not is walked, every file changed', async () => {
    const { root, inner } = preparedVolume('mismatch');
    chownSync(root, 0, 0);
    await setVolumeOwnership(root, FS_GROUP, false, 'OnRootMismatch');
    expect(statSync(inner).gid).toBe(FS_GROUP);
    expect(statSync(inner).mode & 0o777).toBe(0o660);
    expect(statSync(root).gid).toBe(FS_GROUP);
    expect(statSync(root).mode & 0o7777).toBe(0o2770);
  });

  it('Always (and unset): walked whatever the root shows', async () => {
    for (const policy of ['Always', undefined] as const) {
      const { root, inner } = preparedVolume(`always-${policy}`);
      await setVolumeOwnership(root, FS_GROUP, false, policy);
      expect(statSync(inner).gid, String(policy)).toBe(FS_GROUP);
    }
  });
});
