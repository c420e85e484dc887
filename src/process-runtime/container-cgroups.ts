/**
 * A cgroup per container on the process runtime, when it runs as root: the container's processes,
 * including daemonized children and exec sessions, are found, counted and killed through it
 * (the environment marker of proc.ts stays as the way without root).
 *
 * Layout: `<hierarchy>/tskubelet-process-runtime/<runtime key>/<container id>` in the unified
 * hierarchy (cgroup v2) or in each of the memory, cpuacct, cpu and pids hierarchies (v1). The
 * runtime keeps to its own subtree, apart from the kubelet's and containerd's `kubepods`. A
 * process joins before it runs the container's command (joinCgroupArgv: `echo $$` into
 * cgroup.procs, then exec), so nothing it forks can escape.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readdir, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readCgroupUsage, type CgroupUsage } from '../lib/cgroup-usage.js';
import { detectHierarchies, hierarchyDirs, makeCgroup } from '../lib/cgroup-hierarchies.js';
import { cgroupWrites, type ResourceConfig } from '../lib/cgroup-limits.js';

export type { CgroupUsage } from '../lib/cgroup-usage.js';

/** The runtime's cgroup subtree. */
export interface ContainerCgroups {
  version: 1 | 2;
  /** The subtree in each hierarchy used (v2: one; v1: memory, cpuacct, cpu, pids as mounted). */
  roots: string[];
  /** v1: the memory and cpuacct subtrees (usage); v2: the single root. */
  memoryRoot: string;
  cpuRoot: string;
  /** Where CPU limits are written (v1: the cpu controller's subtree, when mounted; v2: the root). */
  cpuLimitRoot?: string;
}

/** The runtime's subtree when cgroups can be used (root, a writable cgroupfs), else undefined. */
export async function detectContainerCgroups(
  runtimeKey: string,
  fsRoot = '/sys/fs/cgroup',
): Promise<ContainerCgroups | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const sub = join('tskubelet-process-runtime', runtimeKey);
  try {
    const h = await detectHierarchies(fsRoot);
    if (!h) return undefined;
    if (h.version === 1 && (!h.byController.has('memory') || !h.byController.has('cpuacct'))) return undefined;
    // v2: the controllers enabled on the way down, for the leaves to account memory and CPU.
    makeCgroup(h, sub);
    if (h.version === 2) {
      const root = join(fsRoot, sub);
      // Its containers are its children: the controllers enabled in it too.
      await writeFile(join(root, 'cgroup.subtree_control'), '+cpu +memory +pids').catch(() => {});
      return { version: 2, roots: [root], memoryRoot: root, cpuRoot: root, cpuLimitRoot: root };
    }
    return {
      version: 1,
      roots: hierarchyDirs(h, sub),
      memoryRoot: join(h.byController.get('memory')!, sub),
      cpuRoot: join(h.byController.get('cpuacct')!, sub),
      cpuLimitRoot: h.byController.has('cpu') ? join(h.byController.get('cpu')!, sub) : undefined,
    };
  } catch {
    return undefined;
  }
}

/** The container's cgroup directories. Pure. */
export function containerCgroupDirs(cg: ContainerCgroups, id: string): string[] {
  return cg.roots.map((r) => join(r, id));
}

/** Creates the container's cgroups; returns the cgroup.procs files a process writes itself into. */
export async function createContainerCgroup(cg: ContainerCgroups, id: string): Promise<string[]> {
  const dirs = containerCgroupDirs(cg, id);
  for (const d of dirs) await mkdir(d, { recursive: true });
  return dirs.map((d) => join(d, 'cgroup.procs'));
}

/** The resource limits a container's cgroup files get (CRI LinuxContainerResources, as runc writes them). */
export interface ContainerLimits {
  memory_limit_in_bytes?: number;
  cpu_shares?: number;
  cpu_quota?: number;
  cpu_period?: number;
}

/**
 * The files to write, in order, for `limits` on container `id` (lib/cgroup-limits.ts): the memory
 * limit, CPU shares (weight on v2) and the CFS quota with its period; nothing for what is unset. Pure.
 */
export function limitWrites(cg: ContainerCgroups, id: string, limits: ContainerLimits | undefined): [string, string][] {
  if (!limits) return [];
  const { memory_limit_in_bytes: memory, cpu_shares: shares, cpu_quota: quota, cpu_period: period } = limits;
  const config: ResourceConfig = {
    ...(memory && memory > 0 ? { memoryLimit: memory } : {}),
    ...(cg.cpuLimitRoot && shares && shares > 0 ? { cpuShares: shares } : {}),
    ...(cg.cpuLimitRoot && quota && quota > 0
      ? { cpuQuota: quota, cpuPeriod: period && period > 0 ? period : 100_000 }
      : {}),
  };
  const rootOf: Record<string, string | undefined> =
    cg.version === 2 ? { '': cg.memoryRoot } : { cpu: cg.cpuLimitRoot, memory: cg.memoryRoot };
  return cgroupWrites(config, cg.version).flatMap((w) => {
    const root = rootOf[w.controller];
    return root ? [[join(root, id, w.file), w.value] as [string, string]] : [];
  });
}

/** Writes the container's limits into its cgroup (before its process joins). */
export async function applyContainerLimits(
  cg: ContainerCgroups,
  id: string,
  limits: ContainerLimits | undefined,
): Promise<void> {
  for (const [file, value] of limitWrites(cg, id, limits)) await writeFile(file, value);
}

/**
 * How many processes of the container the kernel's OOM killer has killed (memory.events / memory.oom_control
 * `oom_kill`).
 */
export function oomKills(cg: ContainerCgroups, id: string): number {
  try {
    const text = readFileSync(
      join(cg.memoryRoot, id, cg.version === 2 ? 'memory.events' : 'memory.oom_control'),
      'utf8',
    );
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** argv that joins the cgroups of `procsFiles` and then execs `argv` (same PID). Pure. */
export function joinCgroupArgv(procsFiles: string[], argv: string[]): string[] {
  if (!procsFiles.length) return argv;
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 127; shift; done; shift; exec "$@"';
  return ['/bin/sh', '-c', script, 'cgroup-join', ...procsFiles, '--', ...argv];
}

/** The PIDs in the container's cgroup (synchronous: a hot path of kills and stats). */
export function cgroupPids(cg: ContainerCgroups, id: string): number[] {
  try {
    return readFileSync(join(cg.roots[0], id, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** SIGKILLs every process in the container's cgroup until it is empty (bounded); returns how many were signalled. */
export async function killCgroup(cg: ContainerCgroups, id: string): Promise<number> {
  let n = 0;
  for (let round = 0; round < 20; round++) {
    const pids = cgroupPids(cg, id);
    if (!pids.length) return n;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        n++;
      } catch {
        /* gone */
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return n;
}

/** Kills everything in the container's cgroup, then removes it; returns how many processes were signalled. */
export async function destroyContainerCgroup(cg: ContainerCgroups, id: string): Promise<number> {
  const n = await killCgroup(cg, id);
  await removeContainerCgroup(cg, id);
  return n;
}

/** Removes the container's (empty) cgroups. */
export async function removeContainerCgroup(cg: ContainerCgroups, id: string): Promise<void> {
  await Promise.all(containerCgroupDirs(cg, id).map((d) => rmdir(d).catch(() => {})));
}

/** Removes the runtime's subtree once it is empty (a runtime that stops for good). */
export async function removeRuntimeCgroups(cg: ContainerCgroups): Promise<void> {
  await Promise.all(
    cg.roots.map((r) =>
      rmdir(r).then(
        () => rmdir(dirname(r)).catch(() => {}),
        () => {},
      ),
    ),
  );
}

/** IDs of the containers that have a cgroup in the subtree. */
export async function containerCgroupIds(cg: ContainerCgroups): Promise<string[]> {
  return (await readdir(cg.roots[0], { withFileTypes: true }).catch(() => []))
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
}

/** The usage of the container's cgroup (cAdvisor's figures, lib/cgroup-usage.ts); undefined when it has none. */
export function cgroupUsage(cg: ContainerCgroups, id: string): CgroupUsage | undefined {
  return readCgroupUsage(
    cg.version === 2
      ? { version: 2, dir: join(cg.memoryRoot, id) }
      : { version: 1, cpuDir: join(cg.cpuRoot, id), memoryDir: join(cg.memoryRoot, id) },
  );
}
