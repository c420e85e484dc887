/**
 * Orphaned pod cgroups (upstream cleanupOrphanedPodCgroups): the pod's cgroup
 * (/kubepods[/burstable|/besteffort]/pod<uid> with cgroupfs, the slice
 * kubepods[-burstable|-besteffort]-pod<uid>.slice with systemd) in each hierarchy is the sandbox's
 * parent, and the runtime removes only the containers' own cgroups; the kubelet removes the pod level once
 * the pod is gone. As upstream's podContainerManager.Destroy, an orphan's processes (a runtime
 * that lost track of them) are SIGKILLed first, then its slice stopped (systemd) and its directories
 * removed, children first.
 */
import { existsSync, readdirSync, realpathSync, statSync, type Dirent } from 'node:fs';
import { readFile, readdir, rmdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  podCgroupName,
  podUidOfCgroup,
  qosCgroupPath,
  type CgroupContext,
  type QosClass,
} from '../runtime/linux-resources.js';
import { timedCgroupOp, type CgroupOpObserver } from '../cgroups/pod-cgroup-manager.js';
import type { SystemdUnits } from '../cgroups/systemd-units.js';

/** How pod cgroups are named (the cgroup root and driver), and systemd's manager for the systemd driver's slices. */
export interface PodCgroupNaming {
  cgroupRoot: string;
  cgroupDriver?: CgroupContext['cgroupDriver'];
  systemd?: SystemdUnits;
}

const contextOf = (naming: PodCgroupNaming): CgroupContext => ({
  cgroupsPerQOS: true,
  cgroupRoot: naming.cgroupRoot,
  cgroupDriver: naming.cgroupDriver ?? 'cgroupfs',
});

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

/**
 * The hierarchies under `cgroupFsRoot`: itself (v2, unified) and each mounted controller (v1), links followed
 * (`cpu -> cpu,cpuacct`) and each hierarchy once.
 */
function hierarchiesOf(cgroupFsRoot: string): string[] {
  const found = new Set([cgroupFsRoot]);
  let entries: Dirent[] = [];
  try {
    entries = readdirSync(cgroupFsRoot, { withFileTypes: true });
  } catch {
    return [cgroupFsRoot];
  }
  for (const entry of entries) {
    if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
    try {
      const real = realpathSync(join(cgroupFsRoot, entry.name));
      if (statSync(real).isDirectory()) found.add(real);
    } catch {
      /* a dangling link */
    }
  }
  return [...found];
}

/**
 * Pod cgroup dirs under `cgroupFsRoot` (v1: every hierarchy; v2: the unified one), by pod UID.
 * Read synchronously: cgroupfs lives in memory, and the scan (every hierarchy and QoS class,
 * every minute) cost several times as much CPU with a promise per directory under V8's interpreter.
 */
export function findPodCgroups(
  cgroupFsRoot: string,
  naming: PodCgroupNaming = { cgroupRoot: '/' },
): Map<string, string[]> {
  const ctx = contextOf(naming);
  const out = new Map<string, string[]>();
  for (const h of hierarchiesOf(cgroupFsRoot)) {
    for (const q of QOS_CLASSES) {
      const dir = join(h, qosCgroupPath(ctx, q));
      for (const name of subdirs(dir)) {
        const uid = podUidOfCgroup(name, ctx.cgroupDriver);
        if (uid) (out.get(uid) ?? out.set(uid, []).get(uid)!).push(`${dir}/${name}`);
      }
    }
  }
  return out;
}

/** Removes a pod's cgroup `dirs`: its slice stopped first with the systemd driver, then what is left of them. */
async function destroyPodCgroup(dirs: readonly string[], naming: PodCgroupNaming): Promise<void> {
  if (naming.cgroupDriver === 'systemd' && naming.systemd)
    for (const slice of new Set(dirs.map((d) => basename(d)))) await naming.systemd.stopUnit(slice);
  for (const d of dirs) await rmdirTree(d);
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
  naming: PodCgroupNaming = { cgroupRoot: '/' },
  observe?: CgroupOpObserver,
): Promise<{ uid: string; killed: number }[]> {
  const removed: { uid: string; killed: number }[] = [];
  for (const [uid, dirs] of findPodCgroups(cgroupFsRoot, naming)) {
    if (keep(uid)) continue;
    const killed = await timedCgroupOp(observe, 'destroy', async () => {
      const n = await killPodProcesses(dirs);
      await destroyPodCgroup(dirs, naming);
      return n;
    });
    removed.push({ uid, killed });
  }
  return removed;
}

/**
 * Removes one pod's cgroups (its directory in each hierarchy and QoS class) without
 * listing the others: the cost of a pod's removal does not grow with the number of pods.
 */
export async function removePodCgroup(
  cgroupFsRoot: string,
  uid: string,
  naming: PodCgroupNaming = { cgroupRoot: '/' },
  observe?: CgroupOpObserver,
): Promise<void> {
  const ctx = contextOf(naming);
  const dirs = hierarchiesOf(cgroupFsRoot).flatMap((h) =>
    QOS_CLASSES.map((q) => join(h, qosCgroupPath(ctx, q), podCgroupName(uid, q, ctx))),
  );
  const present = dirs.filter((d) => existsSync(d));
  if (!present.length) return;
  await timedCgroupOp(observe, 'destroy', () => destroyPodCgroup(present, naming));
}
