/**
 * Pod cgroups on a fake cgroupfs tree (v1 hierarchies and the v2 unified root): one pod's removal
 * takes its pod<uid> directories (with their children) in every hierarchy and QoS class and leaves
 * every other pod's; the orphan sweep removes what `keep` rejects.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPodCgroups, removeOrphanedPodCgroups, removePodCgroup } from '../../../src/agent/gc/pod-cgroups.js';

let root = '';
afterEach(() => rmSync(root, { recursive: true, force: true }));

function tree(): string {
  root = mkdtempSync(join(tmpdir(), 'tsk-cg-'));
  for (const h of ['', 'cpu', 'memory'])
    for (const [q, uid] of [
      ['', 'a'],
      ['burstable', 'b'],
      ['besteffort', 'c'],
      ['burstable', 'a'],
    ])
      mkdirSync(join(root, h, 'kubepods', q, `pod${uid}`, 'ctr1'), { recursive: true });
  return root;
}

describe('pod cgroups', () => {
  it('removes one pod everywhere and nothing else', async () => {
    const r = tree();
    await removePodCgroup(r, 'a');
    const left = await findPodCgroups(r);
    expect([...left.keys()].sort()).toEqual(['b', 'c']);
    expect(left.get('b')).toHaveLength(3);
    expect(existsSync(join(r, 'memory', 'kubepods', 'burstable', 'poda'))).toBe(false);
    expect(existsSync(join(r, 'memory', 'kubepods', 'burstable'))).toBe(true);
    await removePodCgroup(r, 'nope');
    await removePodCgroup(join(r, 'missing'), 'b');
    expect([...(await findPodCgroups(r)).keys()].sort()).toEqual(['b', 'c']);
  });

  it('sweeps orphans by predicate', async () => {
    const r = tree();
    expect((await removeOrphanedPodCgroups(r, (uid) => uid === 'c')).sort()).toEqual(['a', 'b']);
    expect([...(await findPodCgroups(r)).keys()]).toEqual(['c']);
  });
});
