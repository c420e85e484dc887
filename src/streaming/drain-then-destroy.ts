/**
 * Ending a stream whose peer is gone without losing what it holds, in either direction.
 *
 * The end of a readable whose source is gone (a SPDY stream the peer reset, a connection or a
 * WebSocket that closed): what it holds stays readable, its 'end' comes after it, and then it is
 * destroyed. Destroying it at once threw away what a paused reader had not taken yet, and the end
 * with it. A reader that never takes the rest does not keep the stream (and what it holds, and
 * whatever waits for its 'close') alive: it is destroyed after `graceMs` regardless.
 * The caller has already pushed the end (push(null)).
 */
import type { Readable, Writable } from 'node:stream';

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

/**
 * The other direction: a writable whose source failed (a relay's runtime side reset or broke)
 * still writes what is queued, then its end, and is destroyed once that is done. Destroying it at
 * once threw away what the relay had already read and queued for it (Go's proxy writes each read
 * before the next and loses nothing there). A destination that never takes it is destroyed after
 * `graceMs` regardless.
 */
export function endThenDestroy(w: Writable, graceMs = DRAIN_GRACE_MS): void {
  if (w.destroyed) return;
  const timer = setTimeout(() => w.destroy(), graceMs);
  timer.unref();
  w.once('close', () => clearTimeout(timer));
  w.end(() => w.destroy());
}
