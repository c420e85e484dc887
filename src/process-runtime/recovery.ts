/**
 * What a starting process runtime does with what an earlier run left behind.
 *
 * In-process mode (forgetEarlierRun): the kubelet that owned those containers is gone, so every
 * process is killed and every record forgotten. Daemon mode (adoptEarlierRun): detached
 * containers still running are adopted (their output and exit status go through files,
 * container-io.ts); a container that ended meanwhile gets the exit status it recorded. In both,
 * processes no adopted container owns — started just before a crash, before their record was
 * saved, or daemonized children of ended containers — are killed, found by their environment
 * marker (proc.ts) and, as root, their cgroup (container-cgroups.ts).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { messageOf } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { nowNs } from '../lib/time.js';
import {
  childCgroups,
  destroyContainerCgroup,
  killCgroup,
  removeCgroup,
  type ContainerCgroups,
} from './container-cgroups.js';
import { hasDetachedIo, readExitFile } from './container-io.js';
import { isSameProcessAlive, killMarked, signalGroup } from './proc.js';
import { adoptProcess, type ProcessHandle } from './process-handle.js';
import type { ContainerRecord, SandboxRecord, StateStore } from './state.js';

/** What recovery works with. */
export interface RecoveryContext {
  store: StateStore;
  logger: Logger;
  runtimeKey: string;
  cgroups: ContainerCgroups | undefined;
  ioDirOf(id: string): string;
}

/**
 * Kills the processes of, and removes, every container cgroup but those `keep` accepts, and each
 * sandbox cgroup left without containers unless `keepSandbox` accepts it (a sandbox still ready
 * keeps the pod's limits for its next container); returns the processes killed. A cgroup of an
 * earlier release's flat layout (a container's directly under the subtree) is taken as a
 * container's.
 */
async function clearCgroups(
  cg: ContainerCgroups | undefined,
  keep: (id: string) => boolean,
  keepSandbox: (id: string) => boolean,
): Promise<number> {
  if (!cg) return 0;
  let n = 0;
  for (const top of await childCgroups(cg)) {
    const children = await childCgroups(cg, top);
    for (const id of children) if (!keep(id)) n += await destroyContainerCgroup(cg, join(top, id));
    if (keepSandbox(top) || (!children.length && keep(top))) continue;
    n += await killCgroup(cg, top);
    // Refused while a kept container's cgroup is still in it.
    await removeCgroup(cg, top);
  }
  return n;
}

/** Kills every process of the runtime but those of the `spared` containers; logs how many. */
async function killOrphans(
  x: RecoveryContext,
  spared: ReadonlySet<string>,
  sparedSandboxes: ReadonlySet<string> = new Set(),
): Promise<void> {
  const key = x.runtimeKey;
  const n =
    killMarked(`${key}:`, (value) => spared.has(value.slice(key.length + 1))) +
    (await clearCgroups(
      x.cgroups,
      (id) => spared.has(id),
      (id) => sparedSandboxes.has(id),
    ));
  if (n) x.logger.info({ processes: n }, 'process runtime: killed processes left by an earlier run');
}

/** In-process mode: kills and forgets whatever an earlier run left. */
export async function forgetEarlierRun(
  x: RecoveryContext,
  sandboxes: SandboxRecord[],
  containers: ContainerRecord[],
  ioRoot: string,
): Promise<void> {
  for (const c of containers) {
    if (c.state === 'CONTAINER_RUNNING' && c.pid && isSameProcessAlive(c.pid, c.pidStartTime)) {
      x.logger.info(
        { containerId: c.id, pid: c.pid },
        'process runtime: killing container process left by an earlier run',
      );
      signalGroup(c.pid, 'SIGKILL');
    }
  }
  await killOrphans(x, new Set());
  for (const c of containers) await x.store.deleteContainer(c.id);
  for (const s of sandboxes) {
    await x.store.deleteSandbox(s.id);
    await rm(s.dir, { recursive: true, force: true });
  }
  await rm(ioRoot, { recursive: true, force: true });
}

/** Daemon mode: a detached container that still runs, taken over; undefined when it cannot be. */
async function adopt(x: RecoveryContext, c: ContainerRecord): Promise<ProcessHandle | undefined> {
  const ioDir = x.ioDirOf(c.id);
  if (!c.pid || !isSameProcessAlive(c.pid, c.pidStartTime) || !(await hasDetachedIo(ioDir))) return undefined;
  try {
    return adoptProcess({ pid: c.pid, startTime: c.pidStartTime, ioDir, logPath: c.logPath }, nowNs);
  } catch (err) {
    x.logger.warn(
      { containerId: c.id, err: messageOf(err) },
      'process runtime: cannot adopt a running container; killing it',
    );
    return undefined;
  }
}

/**
 * Daemon mode: adopts the running containers of `containers` (`onAdopt` gets each handle) and
 * records the end of the others (updating the records in place); the ready `sandboxes` keep
 * their cgroups.
 */
export async function adoptEarlierRun(
  x: RecoveryContext,
  sandboxes: SandboxRecord[],
  containers: ContainerRecord[],
  onAdopt: (c: ContainerRecord, h: ProcessHandle) => void,
): Promise<void> {
  const adopted = new Set<string>();
  for (const c of containers) {
    if (c.state !== 'CONTAINER_RUNNING') continue;
    const h = await adopt(x, c);
    if (h) {
      adopted.add(c.id);
      onAdopt(c, h);
      continue;
    }
    if (c.pid && isSameProcessAlive(c.pid, c.pidStartTime)) signalGroup(c.pid, 'SIGKILL');
    const exit = await readExitFile(x.ioDirOf(c.id));
    Object.assign(
      c,
      exit
        ? {
            state: 'CONTAINER_EXITED',
            exitCode: exit.exitCode,
            reason: exit.exitCode === 0 ? 'Completed' : 'Error',
            finishedAtNs: exit.finishedAtNs.toString(),
          }
        : {
            state: 'CONTAINER_EXITED',
            exitCode: 137,
            reason: 'Error',
            message: 'process runtime restarted',
            finishedAtNs: nowNs().toString(),
          },
      { pid: undefined },
    );
    await x.store.saveContainer(c);
  }
  await killOrphans(x, adopted, new Set(sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((s) => s.id)));
  if (adopted.size)
    x.logger.info({ containers: adopted.size }, 'process runtime: adopted the running containers of an earlier run');
}
