/**
 * A container's restart count from its log directory (upstream calcRestartCountByLogDir): when the
 * runtime has no instance of the container (its state was wiped, as some runtimes do on a node
 * reboot), the next instance continues after the highest `<n>.log` there (rotated ones too:
 * `<n>.log.<suffix>`), so it neither overwrites nor appends to an earlier instance's log, and its
 * restart count goes on. 0 without such files.
 */
import { readdir, type Dirent } from 'node:fs';

const LOG_NAME = /^(\d+)\.log(\..*)?$/;

/**
 * The restart count the next instance of the container whose log directory is `dir` gets. Read
 * through the callback API, off the event loop (it runs for every container start).
 */
export async function restartCountFromLogs(dir: string): Promise<number> {
  const entries = await new Promise<Dirent[] | undefined>((resolve) =>
    readdir(dir, { withFileTypes: true }, (err, e) => resolve(err ? undefined : e)),
  );
  let count = 0;
  for (const e of entries ?? []) {
    const m = e.isDirectory() ? null : LOG_NAME.exec(e.name);
    const n = m ? Number(m[1]) : NaN;
    if (Number.isSafeInteger(n)) count = Math.max(count, n + 1);
  }
  return count;
}
