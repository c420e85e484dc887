/**
 * The runtime's heavy lifecycle calls — RunPodSandbox, CreateContainer, StartContainer — bounded
 * to a few in flight per core. A runtime asked to start 100 pods at once (containerd: a shim and
 * runc processes per pod, its metadata store) spends a fifth more CPU on contention than one
 * asked a few at a time, and finishes later (docs/performance-history.md, _The runtime's lifecycle calls, bounded_).
 * Calls that have waited go in the order that finishes pods: a container's start before another
 * container's creation before another pod's sandbox. A call slower than the hold (a CNI plugin
 * that hangs) gives its slot up, so a hostNetwork pod still starts while networking is broken.
 * Unlike upstream's kubelet, whose pod workers call the runtime at once; the calls and their
 * results are the same.
 */
import { availableParallelism } from 'node:os';
import type { CriRuntime, RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import { Semaphore } from '../../lib/token-bucket.js';

/** Lifecycle calls in flight per core. */
export const LIFECYCLE_CALLS_PER_CORE = 4;
/** How long a call holds its slot at most. */
export const LIFECYCLE_HOLD_MS = 2000;

/** The gated methods and their priority (higher first). */
const PRIORITY = { runPodSandbox: 0, createContainer: 1, startContainer: 2 } as const;

/** `rt` with its lifecycle calls going through one gate of `limit` slots (default: per core). */
export function gateLifecycleCalls(
  rt: CriRuntime,
  o: { limit?: number; holdMs?: number; clock?: Clock } = {},
): CriRuntime {
  const gate = new Semaphore(o.limit ?? LIFECYCLE_CALLS_PER_CORE * availableParallelism(), {
    priorities: 3,
    holdMs: o.holdMs ?? LIFECYCLE_HOLD_MS,
    clock: o.clock,
  });
  const inner = rt.runtime;
  const gated: Partial<RuntimeService> = {
    runPodSandbox: (...a) => gate.run(() => inner.runPodSandbox(...a), undefined, PRIORITY.runPodSandbox),
    createContainer: (...a) => gate.run(() => inner.createContainer(...a), undefined, PRIORITY.createContainer),
    startContainer: (...a) => gate.run(() => inner.startContainer(...a), undefined, PRIORITY.startContainer),
  };
  const runtime = new Proxy(inner, {
    get: (obj, prop, recv): unknown =>
      typeof prop === 'string' && Object.hasOwn(gated, prop)
        ? gated[prop as keyof RuntimeService]
        : Reflect.get(obj, prop, recv),
  });
  return { ...rt, runtime };
}
