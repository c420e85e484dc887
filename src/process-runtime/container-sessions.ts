/**
 * Commands and sessions in a running container of the process runtime: CRI ExecSync, and the
 * Exec / Attach / PortForward URLs on its streaming server. Each runs in the container's
 * context (container-context.ts): its env, working dir, user, mount namespace and cgroup.
 */
import { join } from 'node:path';
import { KubeletError, badRequest, messageOf, notFound } from '../lib/errors.js';
import type * as cri from '../cri/types.js';
import type { ContainerRecord, SandboxRecord } from './state.js';
import type { ProcessHandle } from './process-handle.js';
import { cgroupPathOf, containerCgroupDirs, type ContainerCgroups } from './container-cgroups.js';
import { resolveExecutableIn } from './container-view.js';
import { execSyncProcess } from './exec-sync.js';
import type { StreamingServer } from './streaming-server.js';
import { containerContext, type ExecContext } from './container-context.js';
import { attachSession, execSession, portForwardSession, streamOptionsOf } from './stream-sessions.js';

/** What the sessions read of the runtime (its live maps, not copies). */
export interface ContainerSessionsDeps {
  containers: ReadonlyMap<string, ContainerRecord>;
  sandboxes: ReadonlyMap<string, SandboxRecord>;
  handles: ReadonlyMap<string, ProcessHandle>;
  streaming: StreamingServer;
  cgroups(): ContainerCgroups | undefined;
  markerOf(id: string): string;
  /** Whether a mount's source may stop answering (mount-sources.ts mayStopAnswering). */
  mayHang(source: string): boolean;
}

export class ContainerSessions {
  constructor(private readonly deps: ContainerSessionsDeps) {}

  /** The context commands run in inside container `c`. */
  contextOf(c: ContainerRecord): ExecContext {
    const cg = this.deps.cgroups();
    const cgroupProcs =
      cg && c.state === 'CONTAINER_RUNNING'
        ? containerCgroupDirs(cg, cgroupPathOf(c)).map((d) => join(d, 'cgroup.procs'))
        : undefined;
    const sandbox = this.deps.sandboxes.get(c.sandboxId);
    return containerContext(c, sandbox, this.deps.markerOf(c.id), (source) => this.deps.mayHang(source), cgroupProcs);
  }

  private running(id: string): ContainerRecord {
    const c = this.deps.containers.get(id);
    if (!c) throw notFound(`container "${id}" not found`);
    if (c.state !== 'CONTAINER_RUNNING') throw badRequest(`container "${id}" is not running (state: ${c.state})`);
    return c;
  }

  /** CRI ExecSync. */
  async execSync(id: string, cmd: string[], timeoutSeconds = 0, signal?: AbortSignal): Promise<cri.ExecSyncResponse> {
    const c = this.running(id);
    if (!cmd?.length) throw badRequest('command is required');
    const ctx = this.contextOf(c);
    let executable;
    try {
      executable = await resolveExecutableIn(ctx.view, cmd[0], ctx.env.PATH, ctx.cwd);
    } catch (err) {
      throw badRequest(`exec: "${cmd[0]}": ${messageOf(err)}`);
    }
    if (!executable) throw badRequest(`exec: "${cmd[0]}": executable file not found in $PATH`);
    const res = await execSyncProcess(cmd, { ...ctx, timeoutSeconds, signal });
    if (res.cancelled) throw new KubeletError('Cancelled', `command ${JSON.stringify(cmd)} was cancelled`);
    if (res.timedOut)
      throw new KubeletError('Timeout', `command ${JSON.stringify(cmd)} timed out after ${timeoutSeconds}s`);
    return { stdout: res.stdout, stderr: res.stderr, exit_code: res.exit_code };
  }

  /** CRI Exec: a URL on the streaming server where the session will run the command. */
  exec(req: cri.ExecRequest): string {
    const c = this.running(req.container_id);
    if (!req.cmd?.length) throw badRequest('command is required');
    if (!req.stdin && !req.stdout && !req.stderr) throw badRequest('one of stdin, stdout, or stderr must be set');
    return this.deps.streaming.register(execSession(req.cmd, streamOptionsOf(req), this.contextOf(c)));
  }

  /** CRI Attach: a URL where the session joins the container's stdio. */
  attach(req: cri.AttachRequest): string {
    const c = this.running(req.container_id);
    const h = this.deps.handles.get(c.id);
    if (!h)
      throw badRequest(`container "${c.id}" cannot be attached: its process was started by an earlier runtime run`);
    if (req.stdin && !c.config.stdin)
      throw badRequest('container does not accept stdin (spec.containers[].stdin is false)');
    if (!!req.tty !== !!c.config.tty)
      throw badRequest(
        `tty ${req.tty ? 'requested' : 'not requested'} but the container has ${c.config.tty ? 'a TTY' : 'no TTY'}`,
      );
    return this.deps.streaming.register(attachSession(streamOptionsOf(req), h));
  }

  /** CRI PortForward: a URL where the session forwards to ports on the host (the pod's network). */
  portForward(req: cri.PortForwardRequest): string {
    const sb = this.deps.sandboxes.get(req.pod_sandbox_id);
    if (!sb) throw notFound(`pod sandbox "${req.pod_sandbox_id}" not found`);
    if (sb.state !== 'SANDBOX_READY') throw badRequest(`pod sandbox "${sb.id}" is not ready`);
    return this.deps.streaming.register(portForwardSession(sb, req));
  }
}
