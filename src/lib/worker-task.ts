/**
 * Runs one task in a worker thread, bounded in time and memory, so that work whose cost depends
 * on its input (decoding a large manifest, say) cannot hold the kubelet's event loop or exhaust
 * its heap. The worker module reads its input from `workerData`, posts one message with its result
 * and ends. A task that runs past its deadline, or whose heap grows past its limit, is stopped and
 * reported as such; the kubelet goes on.
 *
 * `entry` is the worker module: a `.js` file beside the calling chunk in `dist/` (scripts/build.mjs
 * builds each worker as an entry of its own), or the `.ts` source under tsx and vitest, which is
 * then loaded through tsx's loader (a worker does not inherit the parent's `--import` hooks).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { messageOf } from './errors.js';

/** How a worker task is bounded. */
export interface WorkerTaskLimits {
  /** Stopped after this long. */
  deadlineMs: number;
  /** V8's old generation of the worker's isolate, in MiB. */
  maxHeapMb: number;
  signal?: AbortSignal;
}

/** What came of a task: its result, or why there is none. */
export type WorkerTaskOutcome<T> =
  { ok: true; value: T } | { ok: false; reason: 'deadline' | 'memory' | 'aborted' | 'failed'; message: string };

/**
 * tsx's ESM API (its package's `./esm/api` import export), found from this module: the eval'd
 * loader would resolve a bare name from the working directory, and require.resolve gives the
 * CommonJS build.
 */
function tsxEsmApi(): string {
  const pkgPath = createRequire(import.meta.url).resolve('tsx/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  return pathToFileURL(join(dirname(pkgPath), pkg.exports['./esm/api'].import.default)).href;
}

/** The module `entry` names, for a Worker: itself when built, behind tsx's loader when TypeScript. */
function workerScript(entry: URL): { script: string | URL; eval: boolean } {
  if (!entry.pathname.endsWith('.ts')) return { script: entry, eval: false };
  const load = `import(${JSON.stringify(tsxEsmApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`;
  return { script: load, eval: true };
}

/** Runs `entry` on `input` in a new worker thread within `limits`. Never rejects. */
export function runWorkerTask<T>(entry: URL, input: unknown, limits: WorkerTaskLimits): Promise<WorkerTaskOutcome<T>> {
  return new Promise((resolve) => {
    if (limits.signal?.aborted) {
      resolve({ ok: false, reason: 'aborted', message: 'aborted' });
      return;
    }
    const { script, eval: isEval } = workerScript(entry);
    let worker: Worker;
    try {
      worker = new Worker(script, {
        eval: isEval,
        workerData: input,
        resourceLimits: { maxOldGenerationSizeMb: limits.maxHeapMb, stackSizeMb: 4 },
        stdout: false,
        stderr: false,
      });
    } catch (err) {
      resolve({ ok: false, reason: 'failed', message: messageOf(err) });
      return;
    }
    let settled = false;
    const finish = (outcome: WorkerTaskOutcome<T>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      limits.signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
      void worker.terminate();
    };
    const onAbort = () => finish({ ok: false, reason: 'aborted', message: 'aborted' });
    const timer = setTimeout(
      () => finish({ ok: false, reason: 'deadline', message: `took longer than ${limits.deadlineMs / 1000} s` }),
      limits.deadlineMs,
    );
    timer.unref();
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    worker.unref();
    worker.once('message', (value: T) => finish({ ok: true, value }));
    worker.once('error', (err) =>
      finish(
        (err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? { ok: false, reason: 'memory', message: `needed more than ${limits.maxHeapMb} MiB` }
          : { ok: false, reason: 'failed', message: messageOf(err) },
      ),
    );
    worker.once('exit', (code) =>
      finish({ ok: false, reason: 'failed', message: `the worker exited (code ${code}) without a result` }),
    );
  });
}
