/** ExecSync for the process runtime: runs a command in a container's context and captures output. */
import { spawn } from 'node:child_process';
import type * as cri from '../cri/types.js';
import { signalGroup } from './proc.js';
import { commandIn, type ExecContext } from './container-context.js';

/** Output cap per stream, as CRI asks (16 MiB). */
export const EXEC_OUTPUT_CAP = 16 * 1024 * 1024;

/**
 * Runs `cmd`; a timeout kills the command's group and answers exit code 124-like failure as a
 * Timeout; `signal` (the caller has gone) kills it too.
 */
export function execSyncProcess(
  command: string[],
  opts: ExecContext & { timeoutSeconds: number; signal?: AbortSignal },
): Promise<cri.ExecSyncResponse & { timedOut: boolean; cancelled: boolean }> {
  return new Promise((resolve, reject) => {
    const cmd = commandIn(opts, command);
    const child = spawn(cmd.argv[0], cmd.argv.slice(1), {
      cwd: cmd.cwd,
      env: opts.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      uid: cmd.uid,
      gid: cmd.gid,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outLen = 0;
    let errLen = 0;
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => {
      if (outLen < EXEC_OUTPUT_CAP) {
        out.push(d.subarray(0, EXEC_OUTPUT_CAP - outLen));
        outLen += d.length;
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      if (errLen < EXEC_OUTPUT_CAP) {
        err.push(d.subarray(0, EXEC_OUTPUT_CAP - errLen));
        errLen += d.length;
      }
    });
    const timer =
      opts.timeoutSeconds > 0
        ? setTimeout(() => {
            timedOut = true;
            if (child.pid) signalGroup(child.pid, 'SIGKILL');
          }, opts.timeoutSeconds * 1000)
        : undefined;
    let cancelled = false;
    const cancel = () => {
      cancelled = true;
      if (child.pid) signalGroup(child.pid, 'SIGKILL');
    };
    if (opts.signal?.aborted) cancel();
    else opts.signal?.addEventListener('abort', cancel, { once: true });
    child.once('error', (e) => {
      opts.signal?.removeEventListener('abort', cancel);
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      opts.signal?.removeEventListener('abort', cancel);
      clearTimeout(timer);
      if (child.pid) signalGroup(child.pid, 'SIGKILL');
      resolve({
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err),
        exit_code: code ?? 128 + (signal === 'SIGKILL' ? 9 : 15),
        timedOut,
        cancelled,
      });
    });
  });
}
