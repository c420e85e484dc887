/**
 * kubeletCgroups (`--kubelet-cgroups`, upstream's kubelet system container): when it names a
 * cgroup, the kubelet makes it and moves its own process into it, at start and every minute
 * (upstream containerManager's ensureStateFunc, ensureProcessInContainerWithOOMScore), so what
 * the summary reports as the kubelet's system container is the kubelet. Moving the process moves
 * all of its threads; processes it started before (the embedded runtime's containers) stay where
 * they are. A failure is logged and retried, never fatal (as upstream). Unnamed, nothing moves.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../../lib/clock.js';
import { periodically } from '../../lib/periodically.js';
import { messageOf } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { detectHierarchies, hierarchyDirs, makeCgroup } from '../../lib/cgroup-hierarchies.js';

/** How often the kubelet checks it is still in its cgroup (upstream: every minute). */
export const ENSURE_PERIOD_MS = 60_000;

/**
 * Makes cgroup `name` in every hierarchy and moves process `pid` into it; true when it had to move (it was elsewhere).
 */
export async function moveIntoCgroup(pid: number, name: string, fsRoot = '/sys/fs/cgroup'): Promise<boolean> {
  const h = await detectHierarchies(fsRoot);
  if (!h) throw new Error(`no writable cgroup hierarchy under ${fsRoot}`);
  makeCgroup(h, name);
  let moved = false;
  for (const dir of hierarchyDirs(h, name)) {
    const procs = join(dir, 'cgroup.procs');
    const members = (await readFile(procs, 'utf8').catch(() => '')).split('\n');
    if (members.includes(String(pid))) continue;
    await writeFile(procs, String(pid));
    moved = true;
  }
  return moved;
}

/** Moves the kubelet into `name` unless it is there; a failure is logged (and tried again a minute later). */
export async function ensureKubeletCgroup(
  name: string,
  logger: Logger,
  o: { fsRoot?: string; pid?: number } = {},
): Promise<void> {
  try {
    if (await moveIntoCgroup(o.pid ?? process.pid, name, o.fsRoot))
      logger.info({ cgroup: name }, 'moved the kubelet into its cgroup (kubeletCgroups)');
  } catch (err) {
    logger.warn({ cgroup: name, err: messageOf(err) }, 'failed to ensure the kubelet is in its cgroup');
  }
}

/** Keeps the kubelet in `name` (moved there at start by prepareHost): a check every minute until `signal` aborts. */
export function startKubeletCgroup(
  name: string,
  o: { signal: AbortSignal; clock: Clock; logger: Logger; fsRoot?: string; pid?: number },
): void {
  periodically(() => ensureKubeletCgroup(name, o.logger, o), {
    periodMs: ENSURE_PERIOD_MS,
    signal: o.signal,
    clock: o.clock,
    onError: (err) => o.logger.warn({ err: messageOf(err) }, 'ensuring the kubelet cgroup failed'),
  });
}
