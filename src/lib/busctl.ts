/**
 * systemd's `busctl` on the system bus (DBUS_SYSTEM_BUS_ADDRESS, as for any client): the kubelet's D-Bus calls to
 * logind (graceful node shutdown) and to systemd's manager (the systemd cgroup driver's slices) go through the tool
 * every systemd host has, answers as JSON (systemd ≥ 240), each bounded in time and size.
 */
import { spawn } from 'node:child_process';

/** The most an answer may print (a property, an inhibitor list). */
export const MAX_OUTPUT_BYTES = 1 << 20;
/** The most of stderr kept for an error message. */
export const MAX_STDERR_BYTES = 4096;
/** How long one call may take. */
const CALL_TIMEOUT_MS = 10_000;

/** Collects what `stream` prints, up to `max` characters (what comes after is dropped); `text()` reads it. */
export function collected(stream: NodeJS.ReadableStream, max: number): { text(): string } {
  let text = '';
  stream.on('data', (d: Buffer) => {
    if (text.length < max) text += d.toString('utf8');
  });
  return { text: () => text };
}

/**
 * Runs `busctl --system --json=short -- <args>` (the `--`: a value such as `-.slice` is no option); its stdout, or
 * an error with what it printed on stderr (D-Bus's error message, e.g. "Unit x.slice not loaded.").
 */
export function busctl(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('busctl', ['--system', '--json=short', '--', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = collected(child.stdout, MAX_OUTPUT_BYTES);
    const err = collected(child.stderr, MAX_STDERR_BYTES);
    const timer = setTimeout(() => child.kill('SIGKILL'), CALL_TIMEOUT_MS);
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new Error(`cannot run busctl: ${e.code ?? e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(out.text());
      const why = err.text().trim() || (code === null ? `signal ${signal}` : `exit code ${code}`);
      reject(new Error(`busctl ${args[0]} failed: ${why}`));
    });
  });
}
