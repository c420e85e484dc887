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
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists as exists } from './fs-util.js';

const V1_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids'];

/** The hierarchies found under the cgroup mount. */
export interface Hierarchies {
  version: 1 | 2;
  /** Mount point by controller (v2: "" → the unified root). */
  byController: Map<string, string>;
}

/** The hierarchies under `fsRoot`; undefined when there are none to write to. */
export async function detectHierarchies(fsRoot = '/sys/fs/cgroup'): Promise<Hierarchies | undefined> {
  if (await exists(join(fsRoot, 'cgroup.controllers'))) return { version: 2, byController: new Map([['', fsRoot]]) };
  const byController = new Map<string, string>();
  for (const c of V1_CONTROLLERS) {
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
      writeFileSync(join(root, ...parts.slice(0, i), 'cgroup.subtree_control'), '+cpu +memory +pids');
    } catch {
      /* a controller the parent cannot give: its files are missing, which a write then reports */
    }
  }
}
