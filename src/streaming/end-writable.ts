/**
 * The end of a session's output: the stream is ended (unless it already is) and the caller goes on once what
 * was written has been handed on — or the stream failed or was torn down, which a client that left causes — so
 * that what follows (a Status, a close) cannot overtake it.
 */
import type { Writable } from 'node:stream';

export function endWritable(w: Writable | undefined): Promise<void> {
  if (!w || w.writableFinished || w.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    w.once('finish', resolve)
      .once('error', () => resolve())
      .once('close', resolve);
    if (!w.writableEnded) w.end();
  });
}
