/**
 * Orphaned pod cgroups (upstream cleanupOrphanedPodCgroups, cgroupfs layout): the runtime
 * creates /kubepods[/burstable|/besteffort]/pod<uid> under each hierarchy as the sandbox's
 * parent, but removes only the containers' own cgroups; the kubelet removes the pod level once
 * the pod is gone. As upstream's podContainerManager.Destroy, an orphan's processes (a runtime
 * that lost track of them) are SIGKILLed first, then its directories removed, children first.
 */
import { readdirSync } from 'node:fs';
import { readFile, readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { qosLevelDir, type QosClass } from '../runtime/linux-resources.js';
import { timedCgroupOp, type CgroupOpObserver } from '../cgroups/pod-cgroup-manager.js';

const QOS_CLASSES: QosClass[] = ['Guaranteed', 'Burstable', 'BestEffort'];

/** The directories in `dir` (none when it cannot be read). */
function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

/** The hierarchies under `cgroupFsRoot`: itself (v2, unified) and each mounted controller (v1). */
function hierarchiesOf(cgroupFsRoot: string): string[] {
  return [cgroupFsRoot, ...subdirs(cgroupFsRoot).map((d) => join(cgroupFsRoot, d))];
}

/**
 * Pod cgroup dirs under `cgroupFsRoot` (v1: every hierarchy; v2: the unified one), by pod UID.
 * Read synchronously: cgroupfs lives in memory, and the scan (every hierarchy and QoS class,
 * every minute) cost several times as much CPU with a promise per directory under V8's interpreter.
 */
export function findPodCgroups(cgroupFsRoot: string, cgroupRoot = '/'): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const h of hierarchiesOf(cgroupFsRoot)) {
    for (const q of QOS_CLASSES) {
      const dir = join(h, qosLevelDir(cgroupRoot, q));
      for (const name of subdirs(dir)) {
        if (!name.startsWith('pod')) continue;
        const uid = name.slice(3);
        (out.get(uid) ?? out.set(uid, []).get(uid)!).push(`${dir}/${name}`);
      }
    }
  }
  return out;
}

/** `dir` and every directory below it, parents before children ([] when `dir` cannot be read). */
async function dirsUnder(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out = [dir];
  for (const e of entries) if (e.isDirectory()) out.push(...(await dirsUnder(join(dir, e.name))));
  return out;
}

/** Removes a cgroup and those below it, children first (rmdir: a cgroup with processes stays). */
async function rmdirTree(dir: string): Promise<void> {
  for (const d of (await dirsUnder(dir)).reverse()) await rmdir(d).catch(() => {});
}

/** The processes in `dir` and every cgroup below it (cgroup.procs, v1 and v2 alike). */
async function pidsIn(dir: string, into: Set<number>): Promise<void> {
  for (const d of await dirsUnder(dir)) {
    const procs = await readFile(join(d, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const line of procs.split('\n')) if (/^\d+$/.test(line)) into.add(Number(line));
  }
}

/** The processes in a pod's cgroups (`dirs`, one per hierarchy and what is below them). */
export async function podCgroupPids(dirs: readonly string[]): Promise<Set<number>> {
  const pids = new Set<number>();
  for (const d of dirs) await pidsIn(d, pids);
  return pids;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Kills what runs in a pod's cgroups (upstream tryKillingCgroupProcesses: SIGKILL, up to 5
 * passes) and waits briefly for the cgroups to empty; returns how many processes it signalled.
 */
async function killPodProcesses(dirs: readonly string[]): Promise<number> {
  const signalled = new Set<number>();
  for (let pass = 0; pass < 5; pass++) {
    const pids = await podCgroupPids(dirs);
    if (!pids.size) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        signalled.add(pid);
      } catch {
        // ESRCH: it exited meanwhile.
      }
    }
    await pause(20 << pass);
  }
  return signalled.size;
}

/**
 * Removes the cgroups of pods for which `keep(uid)` is false, killing their processes first;
 * returns the pods touched and how many processes each still had.
 */
export async function removeOrphanedPodCgroups(
  cgroupFsRoot: string,
  keep: (uid: string) => boolean,
  cgroupRoot = '/',
  observe?: CgroupOpObserver,
): Promise<{ uid: string; killed: number }[]> {
  const removed: { uid: string; killed: number }[] = [];
  for (const [uid, dirs] of findPodCgroups(cgroupFsRoot, cgroupRoot)) {
    if (keep(uid)) continue;
    const killed = await timedCgroupOp(observe, 'destroy', async () => {
      const n = await killPodProcesses(dirs);
      for (const d of dirs) await rmdirTree(d);
      return n;
    });
    removed.push({ uid, killed });
  }
  return removed;
}

/**
 * Removes one pod's cgroups (its pod<uid> directory in each hierarchy and QoS class) without
 * listing the others: the cost of a pod's removal does not grow with the number of pods.
 */
export async function removePodCgroup(
  cgroupFsRoot: string,
  uid: string,
  cgroupRoot = '/',
  observe?: CgroupOpObserver,
): Promise<void> {
  await timedCgroupOp(observe, 'destroy', () =>
    Promise.all(
      hierarchiesOf(cgroupFsRoot).flatMap((h) =>
        QOS_CLASSES.map((q) => rmdirTree(join(h, qosLevelDir(cgroupRoot, q), `pod${uid}`))),
      ),
    ),
  );
}
