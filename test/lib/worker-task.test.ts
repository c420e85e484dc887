/** runWorkerTask: a result, or why there is none; it never rejects. */
import { describe, expect, it } from 'vitest';
import { runWorkerTask } from '../../src/lib/worker-task.js';

const module = (code: string) => new URL(`data:text/javascript,${encodeURIComponent(code)}`);
const limits = { deadlineMs: 5000, maxHeapMb: 64 };

describe('runWorkerTask', () => {
  it("returns the worker's message, given its input", async () => {
    const echo = module(
      "import { parentPort, workerData } from 'node:worker_threads'; parentPort.postMessage({ twice: workerData * 2 });",
    );
    expect(await runWorkerTask(echo, 21, limits)).toEqual({ ok: true, value: { twice: 42 } });
  });

  it('a worker that throws, exits without a result, or cannot be loaded is a failure with its reason', async () => {
    expect(await runWorkerTask(module("throw new Error('broken input')"), null, limits)).toEqual({
      ok: false,
      reason: 'failed',
      message: 'broken input',
    });
    expect(await runWorkerTask(module('process.exit(3)'), null, limits)).toEqual({
      ok: false,
      reason: 'failed',
      message: 'the worker exited (code 3) without a result',
    });
    const missing = await runWorkerTask(new URL('file:///nonexistent/worker.js'), null, limits);
    expect(missing).toMatchObject({ ok: false, reason: 'failed' });
  });

  it('a worker that never answers is stopped at its deadline; one that allocates without end at its heap limit', async () => {
    expect(await runWorkerTask(module('setInterval(() => {}, 1000)'), null, { ...limits, deadlineMs: 100 })).toEqual({
      ok: false,
      reason: 'deadline',
      message: 'took longer than 0.1 s',
    });
    const hog = module('const keep = []; for (;;) keep.push(new Array(1000).fill(keep.length));');
    expect(await runWorkerTask(hog, null, { deadlineMs: 60_000, maxHeapMb: 16 })).toEqual({
      ok: false,
      reason: 'memory',
      message: 'needed more than 16 MiB',
    });
  });

  it('an aborted signal stops the task, before or while it runs', async () => {
    const ac = new AbortController();
    ac.abort();
    expect(
      await runWorkerTask(module('setInterval(() => {}, 1000)'), null, { ...limits, signal: ac.signal }),
    ).toMatchObject({ reason: 'aborted' });
    const later = new AbortController();
    const pending = runWorkerTask(module('setInterval(() => {}, 1000)'), null, { ...limits, signal: later.signal });
    setTimeout(() => later.abort(), 50);
    expect(await pending).toMatchObject({ ok: false, reason: 'aborted' });
  });
});
