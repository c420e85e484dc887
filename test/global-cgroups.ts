/**
 * Vitest global set-up: the cgroups the suite leaves. The embedded runtimes its tests start (in-process and daemons,
 * some killed on purpose) each make a subtree `tskubelet-process-runtime/<key>`, keyed by their state dir, which only
 * an orderly in-process shutdown removes; kubelets killed on purpose leave pod cgroups under `kubepods`. After the run
 * the cgroups it made are removed, deepest first (one that still has processes stays): hundreds of them slow every
 * cgroup operation of the next run. Cgroups that were there before the run are left alone.
 */
import { readdirSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const CGROUP_FS = '/sys/fs/cgroup';
/** The subtrees whose children the suite makes: the runtimes' keys, and the pod cgroups of each QoS class. */
const PARENTS = [
  'tskubelet-process-runtime',
  'kubepods',
  'kubepods/burstable',
  'kubepods/besteffort',
  'kubepods.slice',
  'kubepods.slice/kubepods-burstable.slice',
  'kubepods.slice/kubepods-besteffort.slice',
];

const subdirectories = (dir: string): string[] => {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(dir, e.name));
  } catch {
    return [];
  }
};

/** The hierarchies' roots: the unified one (v2), or each v1 controller's mount. */
function hierarchies(): string[] {
  try {
    statSync(join(CGROUP_FS, 'cgroup.controllers'));
    return [CGROUP_FS];
  } catch {
    return subdirectories(CGROUP_FS);
  }
}

/** The cgroups directly under the parents, in every hierarchy. */
function children(): Set<string> {
  const found = new Set<string>();
  for (const root of hierarchies())
    for (const parent of PARENTS)
      for (const child of subdirectories(join(root, parent)))
        if (!PARENTS.some((p) => child === join(root, p))) found.add(child);
  return found;
}

/** Removes the cgroup `dir` and those under it, deepest first; one still in use stays, and so do its parents. */
function removeTree(dir: string): void {
  for (const child of subdirectories(dir)) removeTree(child);
  try {
    rmdirSync(dir);
  } catch {
    /* in use, or gone */
  }
}

export function setup(): () => void {
  if (process.getuid?.() !== 0) return () => {};
  const before = children();
  return () => {
    for (const dir of children()) if (!before.has(dir)) removeTree(dir);
  };
}
