/**
 * A container whose set-up failed before its command ran (its cgroup not joined, a mount not
 * made, its working dir missing in its own root) has not started: runc reports that as a start
 * error, and containerd as the container's `StartError` (exit code 128, the error as its
 * message). The set-up shells say which step failed on stderr — the container's log — in a line
 * of their own after the tool's own error, then exit 127; the runtime reads it back from the log
 * when the process ended during its set-up.
 */
import { open } from 'node:fs/promises';

const MARKER = 'tskubelet-process-runtime: set-up failed: ';

/** The shell function the set-up scripts call with the failed step (`… || fail "mount $1"`). */
export const FAIL_FUNCTION = `fail() { echo "${MARKER}$1" >&2; exit 127; }`;

/**
 * The text of each line of a CRI log (partial lines joined, stdout and stderr alike: a TTY
 * container's output, its set-up's messages too, is all stdout). Pure.
 */
function outputLines(log: string): string[] {
  const out: string[] = [];
  let partial = '';
  for (const line of log.split('\n')) {
    const match = /^\S+ (?:stderr|stdout) ([PF]) (.*)$/.exec(line);
    if (!match) continue;
    partial += match[2];
    if (match[1] === 'F') {
      out.push(partial);
      partial = '';
    }
  }
  return out;
}

/**
 * Why the set-up failed, from the end of the container's CRI log: the failed step and the
 * tool's error before it (`mount /data at /srv: mount: /srv: mount point does not exist.`), or
 * undefined when the log has no such line. Pure.
 */
export function setUpFailureIn(log: string): string | undefined {
  const lines = outputLines(log);
  let at = lines.length - 1;
  while (at >= 0 && !lines[at].startsWith(MARKER)) at--;
  if (at < 0) return undefined;
  const step = lines[at].slice(MARKER.length);
  // util-linux's mount adds a hint after its error.
  let before = at - 1;
  if (lines[before]?.trim().startsWith('dmesg(1) may have more information')) before--;
  const cause = lines[before]?.trim();
  return cause && !cause.startsWith(MARKER) ? `${step}: ${cause}` : step;
}

/** The set-up failure the log at `path` ends with (its last 16 KiB read), if any. */
export async function readSetUpFailure(path: string): Promise<string | undefined> {
  const file = await open(path, 'r').catch(() => undefined);
  if (!file) return undefined;
  try {
    const { size } = await file.stat();
    const length = Math.min(size, 16 * 1024);
    const { buffer } = await file.read(Buffer.alloc(length), 0, length, size - length);
    return setUpFailureIn(buffer.toString('utf8'));
  } finally {
    await file.close();
  }
}
