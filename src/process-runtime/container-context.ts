/**
 * The context a container's processes run in (its main process, exec and ExecSync alike): env
 * (a default PATH, HOSTNAME, HOME, then the container's own), working directory (else the
 * sandbox directory) and user (runAsUser / runAsGroup, only when we are root and can switch).
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ContainerRecord, SandboxRecord } from './state.js';
import { enterMountNamespace, setprivArgs, type ProcessUser } from './mount-namespace.js';
import { userNamespaceRange } from './user-namespace.js';
import { joinCgroupArgv } from './container-cgroups.js';
import { CONTAINER_MARKER } from './proc.js';
import type { ContainerView } from './container-view.js';
import { envValueText } from '../cri/env-value.js';

/** Env, working dir and user of a container's processes; `mountNsPid`: enter that process's mount namespace. */
export interface ExecContext {
  env: Record<string, string>;
  cwd: string;
  uid?: number;
  gid?: number;
  groups?: number[];
  mountNsPid?: number;
  /** Root: the cgroup.procs files of the container's cgroup, which commands join first. */
  cgroupProcs?: string[];
  /** The container's OOM score (its QoS class's), which its processes take instead of the kubelet's. */
  oomScoreAdj?: number;
  /** The container's own user namespace: made by its main process, entered (that process's) by the others. */
  userNamespace?: ProcessUser['userNamespace'];
  /** Where its working dir and commands are looked for (container-view.ts): with its mounts once they are made. */
  view: ContainerView;
}

let ownOom: number | undefined;
/** This process's oom_score_adj (read once: it is set at start-up). */
function ownOomScoreAdj(): number {
  if (ownOom === undefined) {
    try {
      ownOom = Number(readFileSync('/proc/self/oom_score_adj', 'utf8').trim()) || 0;
    } catch {
      ownOom = 0;
    }
  }
  return ownOom;
}

/**
 * `argv` run after setting its own oom_score_adj to `value` (best effort: an unprivileged process
 * can only raise it), in the same PID; `argv` itself when there is nothing to change.
 */
export function withOomScoreAdj(value: number | undefined, argv: string[]): string[] {
  if (value === undefined || value === ownOomScoreAdj()) return argv;
  return [
    '/bin/sh',
    '-c',
    'echo "$1" 2>/dev/null > /proc/$$/oom_score_adj; shift; exec "$@"',
    'oom-score-adj',
    String(value),
    ...argv,
  ];
}

/**
 * The argv, spawn user and spawn directory for running `argv` in `ctx` (through nsenter + setpriv when the container
 * has its own mount namespace: its working dir is then entered there, where it may exist only inside).
 */
export function commandIn(
  ctx: ExecContext,
  argv: string[],
): { argv: string[]; uid?: number; gid?: number; cwd: string } {
  const user = { uid: ctx.uid, gid: ctx.gid, groups: ctx.groups, userNamespace: ctx.userNamespace };
  const ns = ctx.userNamespace;
  const entered = ctx.mountNsPid
    ? enterMountNamespace(ctx.mountNsPid, argv, { ...user, cwd: ctx.cwd })
    : ns && 'pid' in ns
      ? ['nsenter', `--user=/proc/${ns.pid}/ns/user`, '--', ...setprivArgs(user), ...argv]
      : undefined;
  const cwd = ctx.mountNsPid ? '/' : ctx.cwd;
  // Joining a cgroup needs root: the user switch then happens after it, through setpriv.
  // The OOM score first, while still root.
  if (ctx.cgroupProcs?.length)
    return {
      argv: withOomScoreAdj(
        ctx.oomScoreAdj,
        joinCgroupArgv(ctx.cgroupProcs, entered ?? [...setprivArgs(user), ...argv]),
      ),
      cwd,
    };
  return entered
    ? { argv: withOomScoreAdj(ctx.oomScoreAdj, entered), cwd }
    : { argv: withOomScoreAdj(ctx.oomScoreAdj, argv), uid: ctx.uid, gid: ctx.gid, cwd };
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A container's own user namespace: the range its main process makes it with, entered once that process runs. */
function userNamespaceOf(c: ContainerRecord): Pick<ExecContext, 'userNamespace'> {
  const range = userNamespaceRange(c.config.linux?.security_context?.namespace_options?.userns_options);
  if (!range) return {};
  return { userNamespace: c.state === 'CONTAINER_RUNNING' && c.pid ? { pid: c.pid } : { range } };
}

/**
 * The context of container `c` in `sandbox`; `marker` tags every process of the container (proc.ts); `cgroupProcs`: its
 * cgroup; `mayHang`: whether a mount's source may stop answering (mount-sources.ts mayStopAnswering).
 */
export function containerContext(
  c: ContainerRecord,
  sandbox: SandboxRecord | undefined,
  marker: string,
  mayHang: (source: string) => boolean,
  cgroupProcs?: string[],
): ExecContext {
  const env: Record<string, string> = {
    PATH: DEFAULT_PATH,
    HOSTNAME: sandbox?.config.hostname || hostname(),
    HOME: process.env.HOME ?? '/',
  };
  for (const kv of c.config.envs ?? []) env[kv.key] = envValueText(kv.value);
  env[CONTAINER_MARKER] = marker;
  const sc = c.config.linux?.security_context;
  const user =
    process.getuid?.() !== 0
      ? {}
      : {
          uid: sc?.run_as_user ? Number(sc.run_as_user.value) : undefined,
          gid: sc?.run_as_group ? Number(sc.run_as_group.value) : undefined,
          groups: sc?.supplemental_groups?.length ? sc.supplemental_groups.map(Number) : undefined,
        };
  return {
    env,
    cwd: c.config.working_dir || sandbox?.dir || '/',
    ...user,
    mountNsPid: c.mountNs && c.state === 'CONTAINER_RUNNING' ? c.pid : undefined,
    view: { mounts: c.mountNs ? (c.config.mounts ?? []) : [], mayHang },
    ...userNamespaceOf(c),
    cgroupProcs,
    oomScoreAdj:
      typeof c.config.linux?.resources?.oom_score_adj === 'number' ? c.config.linux.resources.oom_score_adj : undefined,
  };
}
