/**
 * Pod cgroups on a fake cgroupfs tree (v1 hierarchies and the v2 unified root): one pod's removal
 * takes its pod<uid> directories (with their children) in every hierarchy and QoS class and leaves
 * every other pod's; the orphan sweep removes what `keep` rejects. Then on the machine's real
 * cgroupfs (under a root of the test's own): an orphan's processes are killed before its
 * cgroups go, a kept pod's are not touched.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
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
    const left = findPodCgroups(r);
    expect([...left.keys()].sort()).toEqual(['b', 'c']);
    expect(left.get('b')).toHaveLength(3);
    expect(existsSync(join(r, 'memory', 'kubepods', 'burstable', 'poda'))).toBe(false);
    expect(existsSync(join(r, 'memory', 'kubepods', 'burstable'))).toBe(true);
    await removePodCgroup(r, 'nope');
    await removePodCgroup(join(r, 'missing'), 'b');
    expect([...findPodCgroups(r).keys()].sort()).toEqual(['b', 'c']);
  });

  it('sweeps orphans by predicate; each removal is a "destroy" for the cgroup manager metric', async () => {
    const r = tree();
    const ops: string[] = [];
    const observe = (op: string, seconds: number) => ops.push(`${op}:${seconds >= 0}`);
    expect(
      (await removeOrphanedPodCgroups(r, (uid) => uid === 'c', { cgroupRoot: '/' }, observe)).map((o) => o.uid).sort(),
    ).toEqual(['a', 'b']);
    expect([...findPodCgroups(r).keys()]).toEqual(['c']);
    await removePodCgroup(r, 'c', { cgroupRoot: '/' }, observe);
    expect(ops).toEqual(['destroy:true', 'destroy:true', 'destroy:true']);
  });
});

/** The real cgroupfs: v2 when unified at /sys/fs/cgroup, else v1's pids hierarchy. */
const CGROUP_FS = '/sys/fs/cgroup';
const hierarchy = existsSync(join(CGROUP_FS, 'cgroup.controllers')) ? CGROUP_FS : join(CGROUP_FS, 'pids');

describe('pod cgroups on the real cgroupfs', () => {
  const made: string[] = [];
  const procs: ChildProcess[] = [];
  afterEach(async () => {
    for (const p of procs.splice(0))
      if (p.exitCode === null && p.signalCode === null) await new Promise((r) => p.once('exit', r).kill('SIGKILL'));
    for (const d of made.splice(0).reverse()) {
      try {
        rmdirSync(d);
      } catch {
        // already removed by the code under test
      }
    }
  });

  /** A pod cgroup pod<uid>/ctr1 under a test root with one `sleep` in it. */
  async function podWithProcess(
    testRoot: string,
    uid: string,
  ): Promise<{ proc: ChildProcess; exited: Promise<NodeJS.Signals | null> }> {
    let dir = hierarchy;
    for (const part of [testRoot, 'kubepods', 'burstable', `pod${uid}`, 'ctr1']) {
      dir = join(dir, part);
      if (!existsSync(dir)) {
        mkdirSync(dir);
        made.push(dir);
      }
    }
    const proc = spawn('sleep', ['600'], { stdio: 'ignore' });
    procs.push(proc);
    const exited = new Promise<NodeJS.Signals | null>((r) => proc.once('exit', (_c, sig) => r(sig)));
    await new Promise((r) => proc.once('spawn', r));
    writeFileSync(join(dir, 'cgroup.procs'), String(proc.pid));
    return { proc, exited };
  }

  it('kills the processes left in an orphaned pod cgroup, removes it, and leaves a kept pod alone', async () => {
    const testRoot = `tsk-gc-test-${process.pid}`;
    const orphan = await podWithProcess(testRoot, 'orphan');
    const kept = await podWithProcess(testRoot, 'kept');
    const removed = await removeOrphanedPodCgroups(CGROUP_FS, (uid) => uid === 'kept', { cgroupRoot: testRoot });
    expect(removed).toEqual([{ uid: 'orphan', killed: 1 }]);
    expect(await orphan.exited).toBe('SIGKILL');
    expect(existsSync(join(hierarchy, testRoot, 'kubepods', 'burstable', 'podorphan'))).toBe(false);
    expect(kept.proc.exitCode).toBeNull();
    expect(kept.proc.signalCode).toBeNull();
    expect([...findPodCgroups(CGROUP_FS, { cgroupRoot: testRoot }).keys()]).toEqual(['kept']);
  });
});
