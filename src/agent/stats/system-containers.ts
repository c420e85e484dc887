/**
 * Where the node's system containers live in the cgroup tree (upstream's summary reports them as
 * `systemContainers`): the kubelet's own cgroup (from /proc/self/cgroup) and the pods' cgroup
 * (`<cgroupRoot>/kubepods`, or `kubepods.slice` with the systemd driver) with its QoS classes, in cgroup v1 (cpuacct
 * and
 * memory hierarchies) or v2 (unified), detected once at start. A process in the root cgroup has no
 * cgroup of its own to report: the collector then uses the process's own figures.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { joinClean } from '../../lib/join-clean.js';
import type { CgroupDirs } from '../../lib/cgroup-usage.js';
import type { CgroupContext } from '../runtime/linux-resources.js';
import { qosCgroupIds, type QosCgroupIds } from './cgroup-ids.js';

/** The mounted hierarchies. */
export type CgroupLayout =
  { version: 2; root: string } | { version: 1; cpuacct: string; memory: string; cpu?: string; blkio?: string };

/** Detects cgroup v2 (unified at `fsRoot`) or v1 (cpuacct and memory mounted under it; cpu and blkio when they are). */
export function detectCgroupLayout(fsRoot = '/sys/fs/cgroup'): CgroupLayout | undefined {
  if (existsSync(join(fsRoot, 'cgroup.controllers'))) return { version: 2, root: fsRoot };
  const cpuacct = ['cpuacct', 'cpu,cpuacct']
    .map((d) => join(fsRoot, d))
    .find((d) => existsSync(join(d, 'cpuacct.usage')));
  const memory = join(fsRoot, 'memory');
  const cpu = ['cpu', 'cpu,cpuacct'].map((d) => join(fsRoot, d)).find((d) => existsSync(join(d, 'cpu.shares')));
  const blkio = join(fsRoot, 'blkio');
  if (!cpuacct || !existsSync(join(memory, 'memory.usage_in_bytes'))) return undefined;
  return {
    version: 1,
    cpuacct,
    memory,
    cpu,
    blkio: existsSync(join(blkio, 'blkio.throttle.io_serviced')) ? blkio : undefined,
  };
}

/** The cgroup paths in /proc/<pid>/cgroup text: the unified one (v2) and the cpuacct and memory ones (v1). Pure. */
export function parseProcCgroup(text: string): { unified?: string; cpuacct?: string; memory?: string } {
  const out: { unified?: string; cpuacct?: string; memory?: string } = {};
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const controllers = m[1].split(',');
    if (m[1] === '') out.unified = m[2];
    if (controllers.includes('cpuacct')) out.cpuacct = m[2];
    if (controllers.includes('memory')) out.memory = m[2];
  }
  return out;
}

/** The directories of the cgroup at `path` (one path in every hierarchy). Pure. */
export function cgroupDirs(layout: CgroupLayout, path: string): CgroupDirs {
  return layout.version === 2
    ? { version: 2, dir: joinClean(layout.root, path) }
    : {
        version: 1,
        cpuDir: joinClean(layout.cpuacct, path),
        memoryDir: joinClean(layout.memory, path),
        ...(layout.cpu ? { cfsDir: joinClean(layout.cpu, path) } : {}),
        ...(layout.blkio ? { blkioDir: joinClean(layout.blkio, path) } : {}),
      };
}

/**
 * The kubelet's own cgroup, or undefined when it runs in the root cgroup of a hierarchy used (nothing of its own to
 * report).
 */
export function ownCgroupDirs(layout: CgroupLayout, procCgroup?: string): CgroupDirs | undefined {
  let text = procCgroup;
  try {
    text ??= readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return undefined;
  }
  const p = parseProcCgroup(text);
  if (layout.version === 2) return p.unified && p.unified !== '/' ? cgroupDirs(layout, p.unified) : undefined;
  if (!p.cpuacct || !p.memory || p.cpuacct === '/' || p.memory === '/') return undefined;
  return { version: 1, cpuDir: join(layout.cpuacct, p.cpuacct), memoryDir: join(layout.memory, p.memory) };
}

/**
 * The QoS tree's cgroups (`cgroupsPerQOS`, cgroup-ids.ts `qosCgroupIds`): `kubepods` and its
 * burstable and besteffort classes, each when it exists.
 */
export function qosCgroupDirs(layout: CgroupLayout, ctx: CgroupContext): { [K in keyof QosCgroupIds]?: CgroupDirs } {
  const ids = qosCgroupIds(ctx);
  if (!ids) return {};
  const existing = (id: string) => {
    const d = cgroupDirs(layout, id);
    return existsSync(d.version === 2 ? d.dir : d.memoryDir) ? d : undefined;
  };
  return { pods: existing(ids.pods), burstable: existing(ids.burstable), besteffort: existing(ids.besteffort) };
}
