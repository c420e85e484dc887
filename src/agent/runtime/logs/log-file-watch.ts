/**
 * Wakes a log follower when its file changes, as upstream's follower waits on an fsnotify watch of
 * the log's directory: a line reaches `kubectl logs -f` as soon as it is written, and a rotation (a
 * new file at the path) is seen at once. The directory is watched rather than the file so that the
 * watch outlives the rotation. Where no watch can be had (fs.inotify.max_user_watches spent, a
 * filesystem without inotify) the follower reads on a timer alone.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Why a wait ended: the file was written; a file came or went at its path (a rotation); or nothing was seen (the
 * period passed, the client left, or no watch).
 */
export type LogFileChange = 'written' | 'replaced' | 'unseen';

export class LogFileWatch {
  private watcher: FSWatcher | undefined;
  /** What came while nobody waited: the next wait returns it at once. */
  private pending: LogFileChange | undefined;
  private wake: (() => void) | undefined;

  constructor(path: string) {
    const name = basename(path);
    try {
      this.watcher = watch(dirname(path), { persistent: false }, (event, file) => {
        if (file !== null && file !== name) return;
        // A replacement outranks a write: it is what makes the follower look for a new file.
        if (this.pending !== 'replaced') this.pending = event === 'rename' || file === null ? 'replaced' : 'written';
        this.wake?.();
      });
      // The directory went away (the pod was removed): the follower goes on with its timer.
      this.watcher.on('error', () => this.close());
    } catch {
      this.watcher = undefined;
    }
  }

  /** Whether changes wake the follower (otherwise only the timer does). */
  get watching(): boolean {
    return this.watcher !== undefined;
  }

  /** Resolves at the next change (at once when one came since the last wait), after `ms`, or when `signal` aborts. */
  next(ms: number, signal?: AbortSignal): Promise<LogFileChange> {
    const seen = this.pending;
    if (seen || signal?.aborted) {
      this.pending = undefined;
      return Promise.resolve(seen ?? 'unseen');
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wake = undefined;
        const change = this.pending ?? 'unseen';
        this.pending = undefined;
        resolve(change);
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.wake?.();
  }
}
