/**
 * The kubelet's own profiles for /debug/pprof, taken through V8's inspector in this process: a CPU
 * profile over a given time, and the live heap as V8's sampling heap profiler sees it. Heap sampling
 * starts with the kubelet, before its agent (`startHeapSampling`, called by main while the handler is
 * on), and stays on, as Go's heap profile is always being sampled: the profiler sees only what is
 * allocated once it runs, so one started by the first request would show an all but empty heap. It samples at V8's default mean
 * interval, whose cost does not show in the idle figures (performance-history). The pprof encoder is
 * loaded by the first request: a kubelet nobody profiles does not carry it.
 */
import type { Session } from 'node:inspector/promises';
import type { V8CpuProfile, V8HeapProfile } from '../lib/pprof.js';

/** Go's CPU profiling rate, 100 Hz: `go tool pprof` shows a profile of either kubelet at the same resolution. */
const CPU_INTERVAL_MICROS = 10_000;
/** V8's default mean interval between heap samples (Go's MemProfileRate is 512 KiB too). */
const HEAP_INTERVAL_BYTES = 512 * 1024;

export class CpuProfileBusyError extends Error {}

export interface Profiler {
  /** A CPU profile of `seconds`, ended early when `signal` aborts. Throws CpuProfileBusyError while another runs. */
  cpu(seconds: number, signal: AbortSignal): Promise<Buffer>;
  /** The live heap, as sampled since sampling started; after a full collection when `collectGarbage` (Go's gc=1). */
  heap(o?: { collectGarbage?: boolean }): Promise<Buffer>;
  /** Starts heap sampling (once; `heap` starts it too), so that the heap profile sees what is allocated from now on. */
  startHeapSampling(): Promise<void>;
}

export function createProfiler(): Profiler {
  let session: Promise<Session> | undefined;
  let cpuBusy = false;
  let heapSampling: Promise<unknown> | undefined;
  // Promises kept, so requests at once share one session and start heap sampling once.
  const connected = (): Promise<Session> =>
    (session ??= import('node:inspector/promises').then(({ Session: InspectorSession }) => {
      const opened = new InspectorSession();
      opened.connect();
      return opened;
    }));
  const startHeapSampling = async () => {
    const inspector = await connected();
    await (heapSampling ??= inspector.post('HeapProfiler.startSampling', { samplingInterval: HEAP_INTERVAL_BYTES }));
  };
  return {
    startHeapSampling,
    async cpu(seconds, signal) {
      if (cpuBusy) throw new CpuProfileBusyError('cpu profiling already in use');
      cpuBusy = true;
      try {
        const inspector = await connected();
        await inspector.post('Profiler.enable');
        await inspector.post('Profiler.setSamplingInterval', { interval: CPU_INTERVAL_MICROS });
        const startedAtMs = Date.now();
        await inspector.post('Profiler.start');
        await sleep(seconds * 1000, signal);
        const { profile } = (await inspector.post('Profiler.stop')) as { profile: V8CpuProfile };
        await inspector.post('Profiler.disable');
        return (await import('../lib/pprof.js')).cpuProfileToPprof(profile, CPU_INTERVAL_MICROS, startedAtMs);
      } finally {
        cpuBusy = false;
      }
    },
    async heap(o = {}) {
      await startHeapSampling();
      const inspector = await connected();
      if (o.collectGarbage) {
        await inspector.post('HeapProfiler.collectGarbage');
        // V8 drops the samples of collected objects in callbacks that run after the collection, as tasks of the loop.
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      const { profile } = (await inspector.post('HeapProfiler.getSamplingProfile')) as unknown as {
        profile: V8HeapProfile;
      };
      return (await import('../lib/pprof.js')).heapProfileToPprof(profile, HEAP_INTERVAL_BYTES, Date.now());
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
