/**
 * The cgroup hierarchies the kubelet writes to: cgroup v2's unified one, or v1's cpu, cpuacct,
 * memory and pids (the runtime makes the others), and making a cgroup in each of them (v2: with
 * the controllers enabled on the way down, so its cpu and memory files exist).
 *
 * Cgroup files are kernel state, not disk: they are made and written synchronously. Through the
 * thread pool, whose queue they share with the disk's slow calls, a burst of 100 new pods had every
 * pod's cgroup wait for all the others' (the first sandbox 50 ms later); done in place, the same
 * 100 pod cgroups take 14 ms in all and each pod goes on as soon as its own is made.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists as exists } from './fs-util.js';

const V1_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids'];

/** The hierarchies found under the cgroup mount. */
export interface Hierarchies {
  version: 1 | 2;
  /** Mount point by controller (v2: "" → the unified root). */
  byController: Map<string, string>;
}

/**
 * The hierarchies under `fsRoot`; undefined when there are none to write to. `optional` controllers (`hugetlb`) are
 * among them where the machine has them: a v1 hierarchy of their own, or (v2) named in the root's cgroup.controllers.
 */
export async function detectHierarchies(
  fsRoot = '/sys/fs/cgroup',
  optional: readonly string[] = [],
): Promise<Hierarchies | undefined> {
  const controllers = await readFile(join(fsRoot, 'cgroup.controllers'), 'utf8').catch(() => undefined);
  if (controllers !== undefined) {
    const byController = new Map([['', fsRoot]]);
    const available = new Set(controllers.split(/\s+/));
    for (const c of optional) if (available.has(c)) byController.set(c, fsRoot);
    return { version: 2, byController };
  }
  const byController = new Map<string, string>();
  for (const c of [...V1_CONTROLLERS, ...optional]) {
    const m = await realpath(join(fsRoot, c)).catch(() => undefined);
    if (m && (await exists(join(m, 'cgroup.procs')))) byController.set(c, m);
  }
  return byController.size ? { version: 1, byController } : undefined;
}

/**
 * The directories of `rel` (a path below the cgroup root), one per hierarchy (v1 controllers mounted together share
 * one).
 */
export function hierarchyDirs(h: Hierarchies, rel: string): string[] {
  return [...new Set(h.byController.values())].map((m) => join(m, rel));
}

/**
 * What a cgroup v2 parent writes to cgroup.subtree_control for its children: cpu, memory, pids, and the optional
 * controllers the machine has (`hugetlb`). Pure.
 */
export const v2ChildControllers = (optional: readonly string[] = []): string =>
  ['cpu', 'memory', 'pids', ...optional].map((c) => `+${c}`).join(' ');

/** The optional controllers found among `h`'s (v2: named beside the unified root). */
const optionalFound = (h: Hierarchies) => [...h.byController.keys()].filter((c) => c !== '');

/** Makes `rel` in every hierarchy (v2: enabling cpu, memory and pids in each ancestor). */
export function makeCgroup(h: Hierarchies, rel: string): void {
  if (h.version === 1) {
    for (const d of hierarchyDirs(h, rel)) mkdirSync(d, { recursive: true });
    return;
  }
  const root = h.byController.get('')!;
  const parts = rel.split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    mkdirSync(join(root, ...parts.slice(0, i + 1)), { recursive: true });
    try {
      writeFileSync(join(root, ...parts.slice(0, i), 'cgroup.subtree_control'), v2ChildControllers(optionalFound(h)));
    } catch {
      /* a controller the parent cannot give: its files are missing, which a write then reports */
    }
  }
}
