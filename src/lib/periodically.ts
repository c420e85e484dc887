/**
 * The kubelet's periodic loops (upstream's wait.Until): the garbage collectors, the eviction and
 * CPU managers, the stats collectors, the runtime state, … each run a task every period until the
 * kubelet stops. One shape for all of them: a run never overlaps the one before (the period
 * starts when a run ends, so a slow runtime cannot pile calls up), a failed run is reported and
 * the loop goes on (one bad pass must not end a loop for the kubelet's lifetime), and a stop takes
 * effect at once, during a wait or after the run in flight.
 */
import { realClock, sleep, type Clock } from './clock.js';

export interface PeriodicOptions {
  /** The wait between runs, in ms; a function is asked before each wait. */
  periodMs: number | (() => number);
  /** Stops the loop. */
  signal: AbortSignal;
  /** Where a run's failure goes; the loop goes on after it. */
  onError: (err: unknown) => void;
  /** Run once at the start, before the first wait (default: the first run is one period in). */
  immediately?: boolean;
  clock?: Clock;
}

/** Runs `task` every period until `signal` aborts (returns at once; the loop runs on its own). */
export function periodically(task: () => unknown, options: PeriodicOptions): void {
  const { signal, clock = realClock } = options;
  const wait = () => sleep(typeof options.periodMs === 'number' ? options.periodMs : options.periodMs(), signal, clock);
  void (async () => {
    if (!options.immediately) await wait();
    while (!signal.aborted) {
      try {
        await task();
      } catch (err) {
        options.onError(err);
      }
      await wait();
    }
  })();
}
