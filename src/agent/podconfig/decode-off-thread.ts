/**
 * Decodes manifest text without holding the kubelet's event loop. The cost of decoding grows with
 * the text (the YAML parser takes ~20 µs and ~1 KB per value under --lite-mode: 200,000 values
 * took 4-5 s, a million empty flow collections 46 s and 1.4 GB), so text longer than
 * OFF_THREAD_BYTES is decoded in a worker thread that is stopped after DECODE_DEADLINE_MS or
 * when its heap passes DECODE_MAX_HEAP_MB, and the manifest is then reported as too large or too
 * complex. One such worker runs at a time (the others wait their turn, their deadline not yet
 * running), so a directory of hostile files costs at most one core. Shorter text, every real pod
 * manifest, is decoded in place: a worker costs a thread and ~50 ms to start.
 */
import { Semaphore } from '../../lib/token-bucket.js';
import { runWorkerTask, type WorkerTaskOutcome } from '../../lib/worker-task.js';
import { decodeManifests, type DecodeResult } from './decode.js';

/** Text up to this many characters is decoded on the event loop: at most ~0.3 s even when hostile. */
export const OFF_THREAD_BYTES = 16 * 1024;
export const DECODE_DEADLINE_MS = 10_000;
export const DECODE_MAX_HEAP_MB = 512;

/** Decodes manifest text; `origin` names the file or URL in messages. Never rejects. */
export type ManifestDecoder = (text: string, origin: string, opts?: DecodeOptions) => Promise<DecodeResult>;

export interface DecodeOptions {
  signal?: AbortSignal;
  deadlineMs?: number;
  maxHeapMb?: number;
}

const entry = new URL(import.meta.url.endsWith('.ts') ? './decode-worker.ts' : './decode-worker.js', import.meta.url);

/** One decode in a worker at a time; one whose signal aborts while it waits leaves the queue (and its text) at once. */
const slot = new Semaphore(1);

/** Whether `text` is short enough to decode on the event loop. */
export const decodesInPlace = (text: string): boolean => text.length <= OFF_THREAD_BYTES;

/** Parses `text` as `decodeManifests` does, in a bounded worker when it is long. */
export const decodeManifestsOffThread: ManifestDecoder = async (text, origin, opts = {}) => {
  if (decodesInPlace(text)) return decodeManifests(text, origin);
  const limits = {
    deadlineMs: opts.deadlineMs ?? DECODE_DEADLINE_MS,
    maxHeapMb: opts.maxHeapMb ?? DECODE_MAX_HEAP_MB,
    signal: opts.signal,
  };
  const outcome = await slot
    .run(() => runWorkerTask<DecodeResult>(entry, { text, origin }, limits), opts.signal)
    .catch((): WorkerTaskOutcome<DecodeResult> => ({ ok: false, reason: 'aborted', message: 'aborted' }));
  if (outcome.ok) return outcome.value;
  const why =
    outcome.reason === 'deadline' || outcome.reason === 'memory'
      ? `too large or too complex to decode (${outcome.message})`
      : `could not be decoded: ${outcome.message}`;
  return { pods: [], errors: [`${origin}: ${why}`] };
};
