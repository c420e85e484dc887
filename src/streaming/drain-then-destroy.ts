/**
 * The end of a readable whose source is gone (a SPDY stream the peer reset, a connection or a
 * WebSocket that closed): what it holds stays readable, its 'end' comes after it, and then it is
 * destroyed. Destroying it at once threw away what a paused reader had not taken yet, and the end
 * with it. A reader that never takes the rest does not keep the stream (and what it holds, and
 * whatever waits for its 'close') alive: it is destroyed after `graceMs` regardless.
 * The caller has already pushed the end (push(null)).
 */
import type { Readable } from 'node:stream';

/** How long a reader has to take what is left once the source is gone. */
export const DRAIN_GRACE_MS = 30_000;

export function destroyOnceDrained(r: Readable, graceMs = DRAIN_GRACE_MS): void {
  if (r.destroyed) return;
  if (r.readableEnded) {
    r.destroy();
    return;
  }
  const timer = setTimeout(() => r.destroy(), graceMs);
  timer.unref();
  r.once('end', () => r.destroy());
  r.once('close', () => clearTimeout(timer));
}
