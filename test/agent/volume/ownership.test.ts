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
  it("reports a long change as upstream does: a VolumePermissionChangeInProgress event naming the volume from the pod's UID, then the files done", async () => {
    const uid = '0b5c6f1e-7d2a-4e1b-9c3d-2f6a8e4b1c7d';
    const root = join(base, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'big');
    mkdirSync(root, { recursive: true });
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 100; f++) writeFileSync(join(root, `d${d}`, `f${f}`), '');
    }
    const events: { type: string; reason: string; message: string; pod?: string }[] = [];
    await setVolumeOwnership(root, FS_GROUP, {
      readOnly: false,
      progress: {
        pod: { metadata: { name: 'p', namespace: 'default', uid }, spec: { containers: [] } },
        events: { record: (ref, type, reason, message) => events.push({ type, reason, message, pod: ref.name }) },
        firstAfterMs: 1,
        everyMs: 1,
      },
    });
    const shown = join(uid, 'volumes', 'kubernetes.io~empty-dir', 'big');
    expect(events[0]).toEqual({
      type: 'Warning',
      reason: 'VolumePermissionChangeInProgress',
      message: `Setting volume ownership for ${shown} is taking longer than expected, consider using OnRootMismatch - https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#configure-volume-permission-and-ownership-change-policy-for-pods`,
      pod: 'p',
    });
    expect(events.slice(1).length).toBeGreaterThan(0);
    for (const e of events.slice(1))
      expect(e.message).toMatch(new RegExp(`^Setting volume ownership for ${shown}, processed \\d+ files\\.$`));
    // Nothing is reported once the change is done.
    const count = events.length;
    await new Promise((r) => setTimeout(r, 20));
    expect(events.length).toBe(count);
  });

  it('OnRootMismatch: a root that shows the ownership already is not walked', async () => {
    const { root, inner } = preparedVolume('skip');
    await setVolumeOwnership(root, FS_GROUP, { readOnly: false, changePolicy: 'OnRootMismatch' });
    expect(statSync(inner).gid).toBe(0);
    expect(statSync(inner).mode & 0o777).toBe(0o600);
  });

  it('OnRootMismatch: a root that does not is walked, every file changed', async () => {
    const { root, inner } = preparedVolume('mismatch');
    chownSync(root, 0, 0);
    await setVolumeOwnership(root, FS_GROUP, { readOnly: false, changePolicy: 'OnRootMismatch' });
    expect(statSync(inner).gid).toBe(FS_GROUP);
    expect(statSync(inner).mode & 0o777).toBe(0o660);
    expect(statSync(root).gid).toBe(FS_GROUP);
    expect(statSync(root).mode & 0o7777).toBe(0o2770);
  });

  it('Always (and unset): walked whatever the root shows', async () => {
    for (const policy of ['Always', undefined] as const) {
      const { root, inner } = preparedVolume(`always-${policy}`);
      await setVolumeOwnership(root, FS_GROUP, { readOnly: false, changePolicy: policy });
      expect(statSync(inner).gid, String(policy)).toBe(FS_GROUP);
    }
  });
});
