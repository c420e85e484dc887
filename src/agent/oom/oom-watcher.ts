/**
 * The OOM watcher (upstream pkg/kubelet/oom): reads the kernel's log and records a Warning SystemOOM event on the
 * Node for each process the kernel killed because the whole machine ran out of memory ("System OOM encountered,
 * victim process: stress, pid: 4242"). A container killed at its own limit is not reported here (its status says
 * OOMKilled).
 *
 * Like upstream it reads the log from its oldest record, so an OOM that killed a previous kubelet is reported by the
 * next one. Unlike upstream (kubernetes/kubernetes#133260), a kill reported once is not reported again when the
 * kubelet restarts: the last reported record's sequence number is kept with the boot's ID in
 * `<root-dir>/oom_watcher_state.json`.
 *
 * The log is polled every 5 s without blocking (kmsg.ts): a read that finds nothing costs one system call.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { writeFileAtomic } from '../../lib/fs-util.js';
import type { Logger } from '../../lib/logger.js';
import { periodically } from '../../lib/periodically.js';
import { KmsgReader } from './kmsg.js';
import { OomParser, systemOomMessage } from './oom-parser.js';

export const OOM_POLL_PERIOD_MS = 5000;
export const OOM_STATE_FILE = 'oom_watcher_state.json';

/** What the watcher keeps across restarts: the last record it reported, in which boot. */
interface OomWatcherState {
  bootID: string;
  sequence: number;
}

export class OomWatcher {
  private readonly parser = new OomParser();
  /** Records up to this one were reported in this boot (by this kubelet or one before it). */
  private reportedThrough: number;

  constructor(
    private readonly deps: {
      reader: KmsgReader;
      /** The root dir, which holds the state file. */
      rootDir: string;
      bootID: string;
      /** Records the Node's event. */
      systemOom(message: string): void;
      logger: Logger;
    },
  ) {
    this.reportedThrough = this.loadState();
  }

  /** Reads what the kernel logged since the last poll and reports the system OOMs in it. */
  async poll(): Promise<void> {
    let reported: number | undefined;
    for (const record of this.deps.reader.readAvailable()) {
      const oom = this.parser.push(record.message);
      if (!oom || record.sequence <= this.reportedThrough) continue;
      const message = systemOomMessage(oom);
      if (!message) continue;
      this.deps.logger.info({ pid: oom.pid, process: oom.processName }, 'Got sys oom event');
      this.deps.systemOom(message);
      reported = this.reportedThrough = record.sequence;
    }
    if (reported !== undefined) await this.saveState(reported);
  }

  /** Polls every 5 s until `signal` aborts, then closes the log. */
  start(o: { signal: AbortSignal; clock: Clock }): void {
    o.signal.addEventListener('abort', () => this.deps.reader.close(), { once: true });
    periodically(() => this.poll(), {
      periodMs: OOM_POLL_PERIOD_MS,
      signal: o.signal,
      clock: o.clock,
      immediately: true,
      onError: (err) => this.deps.logger.warn({ err: messageOf(err) }, 'OOM watcher pass failed'),
    });
  }

  /** The sequence number reported through in this boot; -1 when nothing was, or the state is of another boot. */
  private loadState(): number {
    try {
      const state = JSON.parse(readFileSync(join(this.deps.rootDir, OOM_STATE_FILE), 'utf8')) as OomWatcherState;
      return state.bootID === this.deps.bootID && Number.isSafeInteger(state.sequence) ? state.sequence : -1;
    } catch {
      return -1;
    }
  }

  private async saveState(sequence: number): Promise<void> {
    const state: OomWatcherState = { bootID: this.deps.bootID, sequence };
    await writeFileAtomic(join(this.deps.rootDir, OOM_STATE_FILE), JSON.stringify(state));
  }
}

/**
 * Starts the OOM watcher on `path` (the kernel's log); without it (not root, no device) the kubelet runs on without
 * SystemOOM events, as upstream does when it cannot make its watcher.
 */
export function startOomWatcher(o: {
  path?: string;
  rootDir: string;
  bootID: string;
  systemOom(message: string): void;
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
}): OomWatcher | undefined {
  let reader: KmsgReader;
  try {
    reader = KmsgReader.open(o.path ?? '/dev/kmsg');
  } catch (err) {
    o.logger.warn({ err: messageOf(err) }, 'Failed to create an oomWatcher');
    return undefined;
  }
  const watcher = new OomWatcher({
    reader,
    rootDir: o.rootDir,
    bootID: o.bootID,
    systemOom: o.systemOom,
    logger: o.logger,
  });
  watcher.start({ signal: o.signal, clock: o.clock });
  return watcher;
}
