/**
 * Upstream's record of the last graceful node shutdown, `<root-dir>/graceful_node_shutdown_state`: Go's JSON of
 * `{startTime, endTime}` (RFC 3339 with nanoseconds; the zero time "0001-01-01T00:00:00Z" for an end not reached),
 * written atomically when a shutdown starts and when it ends. It outlives the reboot, so that the next kubelet
 * reports the last shutdown's times in kubelet_graceful_shutdown_{start,end}_time_seconds.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../lib/fs-util.js';
import { parseRfc3339Ns, rfc3339NanoFromNs } from '../../lib/time.js';

/** The file's name under the root directory. */
export const SHUTDOWN_STATE_FILE = 'graceful_node_shutdown_state';
/** Go's zero time, as its JSON encoder writes it. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';
/** The most the file may hold (it is two timestamps). */
const MAX_STATE_BYTES = 4096;

/** The last shutdown's start and end (ms since the epoch; undefined: not reached). */
export interface ShutdownState {
  startMs?: number;
  endMs?: number;
}

/** The file's content for `state` (pure). */
export function encodeShutdownState(state: ShutdownState): string {
  const time = (ms: number | undefined) =>
    ms === undefined ? GO_ZERO_TIME : rfc3339NanoFromNs(BigInt(ms) * 1_000_000n);
  return JSON.stringify({ startTime: time(state.startMs), endTime: time(state.endMs) });
}

/** The state in `text` (pure); undefined when it is not upstream's format. */
export function decodeShutdownState(text: string): ShutdownState | undefined {
  let raw: { startTime?: unknown; endTime?: unknown };
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch {
    return undefined;
  }
  const time = (v: unknown): number | undefined | null => {
    if (typeof v !== 'string') return null;
    const ns = parseRfc3339Ns(v);
    if (ns === undefined) return null;
    // Go's zero time, and anything before the epoch, is "not reached".
    return ns <= 0n ? undefined : Number(ns / 1_000_000n);
  };
  const startMs = time(raw?.startTime);
  const endMs = time(raw?.endTime);
  if (startMs === null || endMs === null) return undefined;
  return { startMs, endMs };
}

/** The state file under `rootDir`. */
export class ShutdownStateFile {
  readonly path: string;

  constructor(rootDir: string) {
    this.path = join(rootDir, SHUTDOWN_STATE_FILE);
  }

  /** The recorded state; an empty one when there is no file; an error when it cannot be read or decoded. */
  async load(): Promise<ShutdownState> {
    let text: string;
    try {
      const data = await readFile(this.path);
      if (data.length > MAX_STATE_BYTES) throw new Error(`${this.path} is larger than ${MAX_STATE_BYTES} bytes`);
      text = data.toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
    const state = decodeShutdownState(text);
    if (!state) throw new Error(`${this.path}: not a graceful shutdown state`);
    return state;
  }

  store(state: ShutdownState): Promise<void> {
    return writeFileAtomic(this.path, encodeShutdownState(state), 0o644);
  }
}
