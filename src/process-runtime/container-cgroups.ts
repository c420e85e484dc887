/**
 * A cgroup per container on the process runtime, when it runs as root: the container's processes,
 * including daemonized children and exec sessions, are found, counted and killed through it
 * (the environment marker of proc.ts stays as the way without root).
 *
 * Layout: `<hierarchy>/tskubelet-process-runtime/<runtime key>/<sandbox id>/<container id>` in
 * the unified hierarchy (cgroup v2) or in each of the memory, cpuacct, cpu and pids hierarchies
 * (v1, and cpuset when it is mounted: the CPU manager's cpusets): each pod sandbox is a cgroup
 * with the pod's limits (CRI LinuxPodSandboxConfig.resources,
 * then UpdatePodSandboxResources: what the kubelet's pod cgroup is on other runtimes), its
 * containers cgroups under it with their own. The runtime keeps to its own subtree, apart from
 * the kubelet's and containerd's `kubepods`. A process joins before it runs the container's
 * command (joinCgroupArgv: `echo $$` into cgroup.procs, then exec), so nothing it forks can
 * escape. A cgroup is named by its `path` under the subtree (cgroupPathOf for a container's).
 */
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readCgroupUsage, type CgroupDirs, type CgroupUsage } from '../lib/cgroup-usage.js';
import { detectHierarchies, hierarchyDirs, makeCgroup, v2ChildControllers } from '../lib/cgroup-hierarchies.js';
import { cgroupWrites, type ResourceConfig } from '../lib/cgroup-limits.js';
import { FAIL_FUNCTION } from './set-up-failure.js';

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
  /** Where cpusets are written (v1: the cpuset controller's subtree, when it could be set up; v2: the root). */
  cpusetRoot?: string;
  /**
   * Where huge page limits are written, where the kernel has the hugetlb controller (v1: its subtree; v2: the root).
   */
  hugetlbRoot?: string;
}

/** The runtime's subtree when cgroups can be used (root, a writable cgroupfs), else undefined. */
export async function detectContainerCgroups(
  runtimeKey: string,
  fsRoot = '/sys/fs/cgroup',
): Promise<ContainerCgroups | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const sub = join('tskubelet-process-runtime', runtimeKey);
  try {
    const h = await detectHierarchies(fsRoot, ['hugetlb']);
    if (!h) return undefined;
    if (h.version === 1 && (!h.byController.has('memory') || !h.byController.has('cpuacct'))) return undefined;
    const hugetlb = h.byController.get('hugetlb');
    // v2: the controllers enabled on the way down, for the leaves to account memory and CPU.
    makeCgroup(h, sub);
    if (h.version === 2) {
      const root = join(fsRoot, sub);
      // Its containers are its children: the controllers enabled in it too.
      await writeFile(join(root, 'cgroup.subtree_control'), v2ChildControllers(hugetlb ? ['hugetlb'] : [])).catch(
        () => {},
      );
      // The cpuset controller where the machine offers it: its containers' cpusets then hold.
      const cpuset = await writeFile(join(root, 'cgroup.subtree_control'), '+cpuset').then(
        () => root,
        () => undefined,
      );
      return {
        version: 2,
        roots: [root],
        memoryRoot: root,
        cpuRoot: root,
        cpuLimitRoot: root,
        cpusetRoot: cpuset,
        ...(hugetlb ? { hugetlbRoot: root } : {}),
      };
    }
    const cpusetRoot = await cpusetSubtree(fsRoot, sub);
    return {
      version: 1,
      roots: [...hierarchyDirs(h, sub), ...(cpusetRoot ? [cpusetRoot] : [])],
      memoryRoot: join(h.byController.get('memory')!, sub),
      cpuRoot: join(h.byController.get('cpuacct')!, sub),
      cpuLimitRoot: h.byController.has('cpu') ? join(h.byController.get('cpu')!, sub) : undefined,
      cpusetRoot,
      ...(hugetlb ? { hugetlbRoot: join(hugetlb, sub) } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * The runtime's subtree in cgroup v1's cpuset hierarchy, when it is mounted and writable. A new
 * v1 cpuset cgroup has no CPUs and no memory nodes, and no process can join it until it has: each
 * level of the subtree gets its parent's, and `cgroup.clone_children`, so that the sandboxes and
 * containers made below start with them too.
 */
async function cpusetSubtree(fsRoot: string, sub: string): Promise<string | undefined> {
  const mount = await realpath(join(fsRoot, 'cpuset')).catch(() => undefined);
  if (!mount) return undefined;
  try {
    let parent = mount;
    for (const part of sub.split('/')) {
      const d = join(parent, part);
      await mkdir(d, { recursive: true });
      for (const file of ['cpuset.cpus', 'cpuset.mems'])
        if (!(await readFile(join(d, file), 'utf8')).trim())
          await writeFile(join(d, file), await readFile(join(parent, file), 'utf8'));
      await writeFile(join(d, 'cgroup.clone_children'), '1');
      parent = d;
    }
    return parent;
  } catch {
    return undefined;
  }
}

/** A container's cgroup path under the subtree: its sandbox's cgroup, then its own. Pure. */
export const cgroupPathOf = (c: { id: string; sandboxId: string }): string => join(c.sandboxId, c.id);

/** The directories of the cgroup at `path`, one per hierarchy. Pure. */
export function containerCgroupDirs(cg: ContainerCgroups, path: string): string[] {
  return cg.roots.map((r) => join(r, path));
}

/** Creates the container's cgroups; returns the cgroup.procs files a process writes itself into. */
export async function createContainerCgroup(cg: ContainerCgroups, path: string): Promise<string[]> {
  const dirs = containerCgroupDirs(cg, path);
  for (const d of dirs) await mkdir(d, { recursive: true });
  return dirs.map((d) => join(d, 'cgroup.procs'));
}

/**
 * Creates a pod sandbox's cgroup with the pod's limits; on v2 its children get the controllers
 * too (a parent hands down only what its cgroup.subtree_control enables).
 */
export async function createSandboxCgroup(
  cg: ContainerCgroups,
  sandboxId: string,
  limits: ContainerLimits | undefined,
): Promise<void> {
  for (const d of containerCgroupDirs(cg, sandboxId)) await mkdir(d, { recursive: true });
  if (cg.version === 2)
    await writeFile(
      join(cg.roots[0], sandboxId, 'cgroup.subtree_control'),
      v2ChildControllers(cg.hugetlbRoot ? ['hugetlb'] : []),
    ).catch(() => {});
  await applyCgroupLimits(cg, sandboxId, limits);
}

/** The resource limits a container's cgroup files get (CRI LinuxContainerResources, as runc writes them). */
export interface ContainerLimits {
  memory_limit_in_bytes?: number;
  cpu_shares?: number;
  cpu_quota?: number;
  cpu_period?: number;
  /** The CPUs and memory nodes it may use (kernel list format; empty: its parent's). */
  cpuset_cpus?: string;
  cpuset_mems?: string;
  /** Huge page limits by page size (`2MB`), as the kubelet gives every size the machine has. */
  hugepage_limits?: readonly { page_size: string; limit: number }[];
  /** cgroup v2 files to write as given (`memory.oom.group`, …), as runc writes CRI's `unified`. */
  unified?: Readonly<Record<string, string>>;
}

/**
 * The files to write, in order, for `limits` on the cgroup at `path` (lib/cgroup-limits.ts): the
 * memory limit, CPU shares (weight on v2), the CFS quota with its period, huge page limits (where the
 * kernel has hugetlb), and the cpuset (its memory nodes before its CPUs, as runc writes them); nothing
 * for what is unset. Pure.
 */
export function limitWrites(
  cg: ContainerCgroups,
  path: string,
  limits: ContainerLimits | undefined,
): [string, string][] {
  if (!limits) return [];
  const { memory_limit_in_bytes: memory, cpu_shares: shares, cpu_quota: quota, cpu_period: period } = limits;
  const config: ResourceConfig = {
    ...(memory && memory > 0 ? { memoryLimit: memory } : {}),
    ...(cg.cpuLimitRoot && shares && shares > 0 ? { cpuShares: shares } : {}),
    ...(cg.cpuLimitRoot && quota && quota > 0
      ? { cpuQuota: quota, cpuPeriod: period && period > 0 ? period : 100_000 }
      : {}),
    ...(cg.hugetlbRoot && limits.hugepage_limits?.length
      ? { hugePageLimits: Object.fromEntries(limits.hugepage_limits.map((l) => [l.page_size, l.limit])) }
      : {}),
    ...(cg.version === 2 && limits.unified ? { unified: limits.unified } : {}),
  };
  const rootOf: Record<string, string | undefined> =
    cg.version === 2
      ? { '': cg.memoryRoot, hugetlb: cg.hugetlbRoot }
      : { cpu: cg.cpuLimitRoot, memory: cg.memoryRoot, hugetlb: cg.hugetlbRoot };
  const cpusets: [string, string][] = cg.cpusetRoot
    ? (
        [
          ['cpuset.mems', limits.cpuset_mems],
          ['cpuset.cpus', limits.cpuset_cpus],
        ] as const
      ).flatMap(([file, value]) => (value ? [[join(cg.cpusetRoot!, path, file), value] as [string, string]] : []))
    : [];
  return [
    ...cgroupWrites(config, cg.version).flatMap((w) => {
      const root = rootOf[w.controller];
      return root ? [[join(root, path, w.file), w.value] as [string, string]] : [];
    }),
    ...cpusets,
  ];
}

/** Writes limits into the cgroup at `path` (a container's before its process joins, a sandbox's). */
export async function applyCgroupLimits(
  cg: ContainerCgroups,
  path: string,
  limits: ContainerLimits | undefined,
): Promise<void> {
  for (const [file, value] of limitWrites(cg, path, limits)) await writeFile(file, value);
}

/**
 * How many processes of the container the kernel's OOM killer has killed (memory.events / memory.oom_control
 * `oom_kill`).
 */
export function oomKills(cg: ContainerCgroups, path: string): number {
  try {
    const text = readFileSync(
      join(cg.memoryRoot, path, cg.version === 2 ? 'memory.events' : 'memory.oom_control'),
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
  const script = `${FAIL_FUNCTION}; while [ "$1" != -- ]; do echo $$ > "$1" || fail "join cgroup $1"; shift; done; shift; exec "$@"`;
  return ['/bin/sh', '-c', script, 'cgroup-join', ...procsFiles, '--', ...argv];
}

/** The PIDs in the container's cgroup (synchronous: a hot path of kills and stats). */
export function cgroupPids(cg: ContainerCgroups, path: string): number[] {
  try {
    return readFileSync(join(cg.roots[0], path, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** SIGKILLs every process in the container's cgroup until it is empty (bounded); returns how many were signalled. */
export async function killCgroup(cg: ContainerCgroups, path: string): Promise<number> {
  let n = 0;
  for (let round = 0; round < 20; round++) {
    const pids = cgroupPids(cg, path);
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
export async function destroyContainerCgroup(cg: ContainerCgroups, path: string): Promise<number> {
  const n = await killCgroup(cg, path);
  await removeCgroup(cg, path);
  return n;
}

/** Removes the (empty) cgroup at `path`: a container's, or a sandbox's once its containers' are gone. */
export async function removeCgroup(cg: ContainerCgroups, path: string): Promise<void> {
  await Promise.all(containerCgroupDirs(cg, path).map((d) => rmdir(d).catch(() => {})));
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

/** The names of the cgroups directly under `path` (the subtree's: its sandboxes). */
export async function childCgroups(cg: ContainerCgroups, path = ''): Promise<string[]> {
  return (await readdir(join(cg.roots[0], path), { withFileTypes: true }).catch(() => []))
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
}

/**
 * Where the cgroup at `path` keeps the files cAdvisor reads (lib/cgroup-usage.ts): v2 one
 * directory; v1 the cpuacct and memory ones, and the cpu controller's for the CFS figures. Pure.
 */
export function cgroupDirsOf(cg: ContainerCgroups, path: string): CgroupDirs {
  return cg.version === 2
    ? { version: 2, dir: join(cg.memoryRoot, path) }
    : {
        version: 1,
        cpuDir: join(cg.cpuRoot, path),
        memoryDir: join(cg.memoryRoot, path),
        ...(cg.cpuLimitRoot ? { cfsDir: join(cg.cpuLimitRoot, path) } : {}),
      };
}

/** The usage of the container's cgroup (cAdvisor's figures, lib/cgroup-usage.ts); undefined when it has none. */
export function cgroupUsage(cg: ContainerCgroups, path: string): CgroupUsage | undefined {
  return readCgroupUsage(cgroupDirsOf(cg, path));
}
