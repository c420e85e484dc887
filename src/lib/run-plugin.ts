/**
 * Runs a credential plugin (kubeconfig exec plugins, image credential providers) with bounds: it
 * gets `stdin` (or nothing), its stdout is collected up to `maxBytes`, it is killed after
 * `timeoutMs`; its stderr goes to the kubelet's. Errors name the command and what went wrong,
 * never what it printed (a credential).
 */
import { spawn } from 'node:child_process';

/** What a run needs. */
export interface PluginRun {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  stdin?: string;
  timeoutMs: number;
  maxBytes: number;
  /** How errors name the plugin ("exec plugin", "image credential provider"). */
  what: string;
}

/** The plugin's stdout once it exits 0. */
export function runPlugin(r: PluginRun): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(r.command, r.args, {
      env: r.env,
      stdio: [r.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let failed: Error | undefined;
    const fail = (err: Error) => {
      failed ??= err;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => fail(new Error(`${r.what}: ${r.command} did not finish in ${r.timeoutMs / 1000} s`)),
      r.timeoutMs,
    );
    if (r.stdin !== undefined && child.stdin) {
      // A plugin that exits without reading its input is not an error of ours.
      child.stdin.on('error', () => {});
      child.stdin.end(r.stdin);
    }
    child.stdout!.on('data', (d: Buffer) => {
      size += d.length;
      if (size > r.maxBytes) fail(new Error(`${r.what}: ${r.command} printed more than ${r.maxBytes} bytes`));
      else chunks.push(d);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new Error(`${r.what}: cannot run ${r.command}: ${err.code ?? err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failed) return reject(failed);
      if (code !== 0)
        return reject(
          new Error(`${r.what}: ${r.command} failed with ${code === null ? `signal ${signal}` : `exit code ${code}`}`),
        );
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
