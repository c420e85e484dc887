/**
 * Orphaned pod cgroups (upstream cleanupOrphanedPodCgroups, cgroupfs layout): the runtime
 * creates /kubepods[/burstable|/besteffort]/pod<uid> under each hierarchy as the sandbox's
 * parent, but removes only the containers' own cgroups; the kubelet removes the pod level once
 * the pod is gone. Empty directories only (rmdir), children first.
 */
import { readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';

const QOS_DIRS = ['', 'burstable', 'besteffort'];

/** The hierarchies under `cgroupFsRoot`: itself (v2, unified) and each mounted controller (v1). */
async function hierarchiesOf(cgroupFsRoot: string): Promise<string[]> {
  return [cgroupFsRoot, ...(await readdir(cgroupFsRoot, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => join(cgroupFsRoot, d.name))];
}

/** Pod cgroup dirs under `cgroupFsRoot` (v1: every hierarchy; v2: the unified one), by pod UID. */
export async function findPodCgroups(cgroupFsRoot: string, cgroupRoot = '/'): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  let hierarchies: string[];
  try {
    hierarchies = await hierarchiesOf(cgroupFsRoot);
  } catch {
    return out;
  }
  for (const h of hierarchies) {
    for (const q of QOS_DIRS) {
      const dir = join(h, cgroupRoot, 'kubepods', q);
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries) {
        if (!e.isDirectory() || !e.name.startsWith('pod')) continue;
        const uid = e.name.slice(3);
        (out.get(uid) ?? out.set(uid, []).get(uid)!).push(join(dir, e.name));
      }
    }
  }
  return out;
}

async function rmdirTree(dir: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await rmdirTree(join(dir, e.name));
  await rmdir(dir).catch(() => {});
}

/** Removes the cgroups of pods for which `keep(uid)` is false; returns the UIDs touched. */
export async function removeOrphanedPodCgroups(cgroupFsRoot: string, keep: (uid: string) => boolean, cgroupRoot = '/'): Promise<string[]> {
  const removed: string[] = [];
  for (const [uid, dirs] of await findPodCgroups(cgroupFsRoot, cgroupRoot)) {
    if (keep(uid)) continue;
    for (const d of dirs) await rmdirTree(d);
    removed.push(uid);
  }
  return removed;
}

/**
 * Removes one pod's cgroups (its pod<uid> directory in each hierarchy and QoS class) without
 * listing the others: the cost of a pod's removal does not grow with the number of pods.
 */
export async function removePodCgroup(cgroupFsRoot: string, uid: string, cgroupRoot = '/'): Promise<void> {
  let hierarchies: string[];
  try {
    hierarchies = await hierarchiesOf(cgroupFsRoot);
  } catch {
    return;
  }
  await Promise.all(hierarchies.flatMap((h) => QOS_DIRS.map((q) => rmdirTree(join(h, cgroupRoot, 'kubepods', q, `pod${uid}`)))));
}
