/**
 * How a container's main process is started on the process runtime: the checks a runtime makes
 * before exec (command, working dir, executable, mounts), then the chain the process runs
 * through — join the container's cgroup (root; its memory and CPU limits set first), enter a
 * private mount namespace with the container's mounts or switch user, the exit wrapper (daemon
 * mode), the command — all in one PID. A failure of that set-up is a start error, as runc's.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { messageOf } from '../lib/errors.js';
import { nowNs } from '../lib/time.js';
import type { ContainerRecord } from './state.js';
import { withOomScoreAdj, type ExecContext } from './container-context.js';
import {
  applyCgroupLimits,
  cgroupPathOf,
  createContainerCgroup,
  joinCgroupArgv,
  type ContainerCgroups,
} from './container-cgroups.js';
import { kindIn, resolveExecutableIn, type ContainerView } from './container-view.js';
import { isSettingUp, planMountNamespace, setprivArgs, wrapInMountNamespace } from './mount-namespace.js';
import { effectiveMounts } from './mount-sources.js';
import { startProcess, type ProcessHandle } from './process-handle.js';
import { readSetUpFailure } from './set-up-failure.js';
import { processStartTime } from './proc.js';

/** What a launch needs besides the record. */
export interface LaunchOptions {
  ctx: ExecContext;
  cgroups?: ContainerCgroups;
  /** Daemon mode: where the detached I/O goes (container-io.ts). */
  ioDir?: string;
  /**
   * The container's scratch dir (mount-namespace.ts): made when its namespace needs one, removed with the container.
   */
  scratchDir: string;
}

/**
 * Starts container `c` (setting its `mountNs`); the message says why
 * it could not, in the words of upstream's runtimes where they have some.
 */
export async function launchContainer(
  c: ContainerRecord,
  o: LaunchOptions,
): Promise<{ handle: ProcessHandle } | { message: string }> {
  const argv = [...(c.config.command ?? []), ...(c.config.args ?? [])];
  if (argv.length === 0)
    return {
      message:
        'no command specified: the process runtime runs host commands, so the container needs `command` (images are not unpacked)',
    };
  const { env, cwd, uid, gid, groups, userNamespace } = o.ctx;
  // The user switch, in the container's own user namespace when it has one (made last, after the host-side set-up).
  const switchUser = { uid, gid, groups, userNamespace };
  const mounts = await effectiveMounts(c.config.mounts ?? [], process.getuid?.() === 0, o.ctx.view.mayHang);
  if (!mounts.ok) return { message: mounts.message };
  // The working dir and the command are looked for where the container will look for them: through its mounts.
  const view = { ...o.ctx.view, mounts: mounts.mounts };
  const start = await startPoint(view, argv[0], cwd, env.PATH, process.getuid?.() === 0);
  if ('refusal' in start) return { message: start.refusal };
  let wrap: ((a: string[]) => string[]) | undefined;
  let user: { uid?: number; gid?: number } = { uid, gid };
  if (mounts.mounts.length || start.makeWorkingDir) {
    let plan;
    try {
      plan = await planMountNamespace(mounts.mounts, mounts.kinds, o.scratchDir, {
        ...(start.makeWorkingDir ? { workingDir: cwd } : {}),
      });
      if (plan.shadows.length) await mkdir(o.scratchDir, { recursive: true, mode: 0o700 });
    } catch (err) {
      return { message: `failed to create mount points: ${messageOf(err)}` };
    }
    wrap = (a) => wrapInMountNamespace(a, mounts.mounts, switchUser, plan, cwd);
    user = {};
    c.mountNs = true;
  }
  const cgroupProcs = o.cgroups
    ? await createContainerCgroup(o.cgroups, cgroupPathOf(c)).catch(() => undefined)
    : undefined;
  if (cgroupProcs && o.cgroups) {
    // The limits are in place before the process joins, as runc sets them before it execs.
    try {
      await applyCgroupLimits(o.cgroups, cgroupPathOf(c), c.config.linux?.resources ?? undefined);
    } catch (err) {
      return { message: `failed to apply the container's resource limits: ${messageOf(err)}` };
    }
  }
  if (cgroupProcs) {
    // The main process joins the cgroup first (as root), then enters the namespace or switches user.
    const inner = wrap ?? ((a: string[]) => [...setprivArgs(switchUser), ...a]);
    wrap = (a) => joinCgroupArgv(cgroupProcs, inner(a));
    user = {};
  }
  if (!wrap && userNamespace) {
    wrap = (a) => [...setprivArgs(switchUser), ...a];
    user = {};
  }
  // The OOM score of the container's QoS class (the kubelet's own, -999 by default, is inherited
  // otherwise), set first while still root; an unprivileged runtime can only raise it.
  const inner = wrap;
  wrap = (a) => withOomScoreAdj(o.ctx.oomScoreAdj, inner ? inner(a) : a);
  try {
    const handle = await startProcess(
      {
        argv,
        wrap,
        ioDir: o.ioDir,
        env,
        // In its own mount namespace the process enters its working dir there (mount-namespace.ts), where it may be
        // a mount point the host does not have.
        cwd: c.mountNs ? '/' : cwd,
        tty: !!c.config.tty,
        stdin: !!c.config.stdin,
        logPath: c.logPath,
        ...user,
      },
      nowNs,
    );
    // As runc's start: the container's mounts are in place once it is started, so that an exec
    // or a probe right after it sees them; and a set-up that failed is a start error, not an exit
    // of the container (set-up-failure.ts).
    if (!(await setUpDone(handle.pid))) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const failure = await Promise.race([
        handle.exited.then(() => readSetUpFailure(c.logPath)),
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), SETUP_WAIT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      if (failure) return { message: `failed to start container process: ${failure}` };
    }
    return { handle };
  } catch (err) {
    return { message: `failed to start container process: ${messageOf(err)}` };
  }
}

/**
 * Whether the container's command can start in `view`: the refusal, as runc words it, when its working dir is not a
 * directory or its command no executable; else whether its working dir is to be made, as runc makes a missing one
 * (`canMake`: the runtime can make it in the container's own mount namespace, as root).
 */
async function startPoint(
  view: ContainerView,
  command: string,
  cwd: string,
  pathEnv: string | undefined,
  canMake: boolean,
): Promise<{ refusal: string } | { makeWorkingDir: boolean }> {
  const chdirFailed = `chdir to cwd ("${cwd}") set in config failed`;
  let kind;
  try {
    kind = await kindIn(view, cwd);
  } catch (err) {
    return { refusal: `${chdirFailed}: ${messageOf(err)}` };
  }
  if (kind === 'other') return { refusal: `${chdirFailed}: not a directory` };
  if (kind === undefined && !canMake) return { refusal: `${chdirFailed}: no such file or directory` };
  try {
    if (!(await resolveExecutableIn(view, command, pathEnv, cwd)))
      return { refusal: `exec: "${command}": executable file not found in $PATH` };
  } catch (err) {
    return { refusal: `exec: "${command}": ${messageOf(err)}` };
  }
  return { makeWorkingDir: kind === undefined };
}

/** How long a container's namespace set-up may take before the start goes on regardless. */
const SETUP_WAIT_MS = 10_000;

/**
 * Where a starting process is, from its /proc cmdline (undefined: the process is gone): still in
 * its set-up, past it (its command runs), or ended. An empty cmdline is a zombie's — or that of a
 * process between the two programs of an exec, which goes on: `zombie` tells them apart. Pure.
 */
export function setUpProgress(cmdline: string | undefined, zombie: () => boolean): 'setting-up' | 'running' | 'ended' {
  if (cmdline === undefined) return 'ended';
  const argv = cmdline.split('\0');
  if (!argv[0]) return zombie() ? 'ended' : 'setting-up';
  return isSettingUp(argv) ? 'setting-up' : 'running';
}

/**
 * Whether process `pid` ran past its set-up: true once its command runs (or SETUP_WAIT_MS has
 * passed), false when it ended during its set-up.
 */
async function setUpDone(pid: number): Promise<boolean> {
  const end = performance.now() + SETUP_WAIT_MS;
  while (performance.now() < end) {
    let cmdline: string | undefined;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      cmdline = undefined;
    }
    const progress = setUpProgress(cmdline, () => processStartTime(pid) === undefined);
    if (progress !== 'setting-up') return progress === 'running';
    await new Promise((r) => setTimeout(r, 2));
  }
  return true;
}
