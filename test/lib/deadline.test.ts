/**
 * deadlineSignal: aborts at its deadline or with its outer signal. Regression: `AbortSignal.any` over
 * `AbortSignal.timeout` (what the manifest URL's GET and the node log query used) lost its timeout to a garbage
 * collection on Node 20 and never aborted (nodejs/node#57736).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { deadlineSignal } from '../../src/lib/deadline.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Whether `signal` aborts within `ms`, a garbage collection running meanwhile. */
const abortsWithin = (signal: AbortSignal, ms: number) =>
  new Promise<boolean>((resolve) => {
    const giveUp = setTimeout(() => resolve(false), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(giveUp);
      resolve(true);
    });
    setTimeout(gc, 10);
  });

describe('deadlineSignal', () => {
  it('aborts at its deadline with a TimeoutError, a garbage collection notwithstanding', async () => {
    for (let i = 0; i < 5; i++) {
      const deadline = deadlineSignal(50);
      expect(await abortsWithin(deadline.signal, 1000)).toBe(true);
      expect((deadline.signal.reason as DOMException).name).toBe('TimeoutError');
    }
  });

  it("aborts with the outer signal's reason, at once when it has aborted already; done() clears the deadline", async () => {
    const outer = new AbortController();
    const deadline = deadlineSignal(60_000, outer.signal);
    outer.abort('client gone');
    expect(deadline.signal.reason).toBe('client gone');
    const gone = new AbortController();
    gone.abort('before');
    expect(deadlineSignal(60_000, gone.signal).signal.reason).toBe('before');
    const cleared = deadlineSignal(30);
    cleared.done();
    expect(await abortsWithin(cleared.signal, 200)).toBe(false);
  });
});
