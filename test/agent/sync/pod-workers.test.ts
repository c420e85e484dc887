/**
 * Pod workers: each sync is told since when nothing has acted for its pod — the end of the
 * worker's previous sync, or for its first the time a worker of its UID was dropped (0 for a new UID); idleness is
 * tracked.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import {
  PodWorkers,
  WORKER_BACKOFF_MS,
  workerRetryDelayMs,
  type PodSyncer,
} from '../../../src/agent/sync/pod-workers.js';
import { createLogger } from '../../../src/lib/logger.js';

const pod = (uid: string): Pod =>
  ({ metadata: { uid, name: uid, namespace: 'default' }, spec: { containers: [] } }) as unknown as Pod;

const workersOf = (syncer: PodSyncer) =>
  new PodWorkers({ syncer, logger: createLogger({ level: 'fatal' }), now: () => Date.now() });

function recordingSyncer(o: { failFirst?: boolean } = {}) {
  const syncs: { uid: string; quietSinceMs: number; endedAtMs?: number; type: string }[] = [];
  let failed = false;
  const syncer: PodSyncer = {
    syncPod: async (p, quiet, type) => {
      const s: (typeof syncs)[number] = { uid: p.metadata.uid!, quietSinceMs: quiet.quietSinceMs, type };
      syncs.push(s);
      await new Promise((r) => setTimeout(r, 2));
      s.endedAtMs = performance.now();
      if (o.failFirst && !failed) {
        failed = true;
        throw new Error('runtime down');
      }
      return { terminal: false };
    },
    syncTerminatingPod: async () => {},
    syncTerminatedPod: async () => {},
  };
  return { syncer, syncs };
}

/** The syncs of pod a created, then synced again. */
async function createThenSync(o: { failFirst?: boolean } = {}) {
  const r = recordingSyncer(o);
  const w = workersOf(r.syncer);
  w.update({ pod: pod('a'), kind: 'create' });
  await w.whenIdle();
  w.update({ pod: pod('a'), kind: 'sync' });
  await w.whenIdle();
  return r.syncs;
}

describe('PodWorkers', () => {
  it("dates a worker's first sync from its UID's last worker dropped (none: 0), and each later one from the end of the sync before", async () => {
    const [first, second] = await createThenSync();
    expect(first.quietSinceMs).toBe(0);
    expect(second.quietSinceMs).toBeGreaterThanOrEqual(first.endedAtMs!);
    expect(second.quietSinceMs).toBeLessThan(second.endedAtMs!);
  });

  it("tells each sync its update's type, upstream's SyncPodType (create, then sync)", async () => {
    expect((await createThenSync()).map((s) => s.type)).toEqual(['create', 'sync']);
  });

  it('dates the sync after a failed one from the end of the failed one (it may have created things)', async () => {
    const [first, second] = await createThenSync({ failFirst: true });
    expect(second.quietSinceMs).toBeGreaterThanOrEqual(first.endedAtMs!);
  });

  it('dates a new worker’s quiet time from the drop of its UID’s last worker, so a re-added pod is not taken for new', async () => {
    const r = recordingSyncer();
    const w = workersOf(r.syncer);
    w.update({ pod: pod('a'), kind: 'create' });
    await w.whenIdle();
    w.update({ pod: pod('a'), kind: 'kill' });
    await w.whenIdle();
    const before = performance.now();
    w.forget('a');
    expect(w.stateOf('a')).toBeUndefined();
    w.update({ pod: pod('a'), kind: 'create' });
    await w.whenIdle();
    const again = r.syncs.at(-1)!;
    expect(again.uid).toBe('a');
    expect(again.quietSinceMs).toBeGreaterThanOrEqual(before);
  });

  it('dates a new pod’s first sync from 0 although another worker was just dropped: nothing ever acted for its UID', async () => {
    const r = recordingSyncer();
    const w = workersOf(r.syncer);
    w.update({ pod: pod('old'), kind: 'create' });
    w.update({ pod: pod('old'), kind: 'kill' });
    await w.whenIdle();
    w.forget('old');
    w.update({ pod: pod('new'), kind: 'create' });
    await w.whenIdle();
    expect(r.syncs.find((s) => s.uid === 'new')!.quietSinceMs).toBe(0);
  });

  it('is idle only when every worker is', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const syncer: PodSyncer = {
      syncPod: async (p) => {
        if (p.metadata.uid === 'slow') await gate;
        return { terminal: false };
      },
      syncTerminatingPod: async () => {},
      syncTerminatedPod: async () => {},
    };
    const w = workersOf(syncer);
    w.update({ pod: pod('slow'), kind: 'create' });
    w.update({ pod: pod('fast'), kind: 'create' });
    let idle = false;
    const p = w.whenIdle().then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(idle).toBe(false);
    release();
    await p;
    expect(idle).toBe(true);
  });
});

describe('a failed step is tried again after the worker back-off (regression: a runtime outage left pods unsynced for good)', () => {
  /** Workers whose retry timers the test fires by hand. */
  function withManualTimers(syncer: PodSyncer) {
    const timers: { fn: () => void; ms: number; cancelled: boolean }[] = [];
    const workers = new PodWorkers({
      syncer,
      logger: createLogger({ level: 'fatal' }),
      now: () => Date.now(),
      setTimer: (fn, ms) => {
        const t = { fn, ms, cancelled: false };
        timers.push(t);
        return () => (t.cancelled = true);
      },
    });
    const fire = async () => {
      for (const t of timers.splice(0)) if (!t.cancelled) t.fn();
      await workers.whenIdle();
    };
    return { workers, timers, fire };
  }

  it('retries a failed sync with no other update for the pod', async () => {
    let calls = 0;
    const syncer: PodSyncer = {
      syncPod: async () => {
        if (++calls === 1) throw new Error('ListPodSandbox: connect ECONNREFUSED');
        return { terminal: false };
      },
      syncTerminatingPod: async () => {},
      syncTerminatedPod: async () => {},
    };
    const { workers, timers, fire } = withManualTimers(syncer);
    workers.update({ pod: pod('a'), kind: 'create' });
    await workers.whenIdle();
    expect(calls).toBe(1);
    expect(timers.map((t) => t.ms >= WORKER_BACKOFF_MS && t.ms <= 1.5 * WORKER_BACKOFF_MS)).toEqual([true]);
    await fire();
    expect(calls).toBe(2);
    expect(timers).toEqual([]); // it succeeded: nothing more is scheduled by the workers
  });

  it('retries the stop of a pod deleted while the runtime was down, until it is stopped and released', async () => {
    let stops = 0;
    const released: string[] = [];
    const syncer: PodSyncer = {
      syncPod: async () => ({ terminal: false }),
      syncTerminatingPod: async (_p, grace) => {
        if (++stops <= 2) throw new Error('StopPodSandbox: connect ECONNREFUSED');
        expect(grace).toBe(7);
      },
      syncTerminatedPod: async (p) => void released.push(p.metadata.uid!),
    };
    const { workers, fire } = withManualTimers(syncer);
    workers.update({ pod: pod('b'), kind: 'create' });
    await workers.whenIdle();
    workers.update({ pod: pod('b'), kind: 'kill', gracePeriodSeconds: 7 });
    await workers.whenIdle();
    expect([stops, workers.stateOf('b')]).toEqual([1, 'terminating']);
    await fire();
    expect([stops, workers.stateOf('b')]).toEqual([2, 'terminating']);
    await fire();
    expect([stops, workers.stateOf('b'), released]).toEqual([3, 'terminated', ['b']]);
    expect(workers.isFinished('b')).toBe(true);
  });

  it('keeps one retry pending at a time and drops it with the worker', async () => {
    const syncer: PodSyncer = {
      syncPod: async () => {
        throw new Error('down');
      },
      syncTerminatingPod: async () => {},
      syncTerminatedPod: async () => {},
    };
    const { workers, timers } = withManualTimers(syncer);
    workers.update({ pod: pod('c'), kind: 'create' });
    await workers.whenIdle();
    workers.update({ pod: pod('c'), kind: 'sync' });
    await workers.whenIdle();
    expect(timers).toHaveLength(1);
  });

  it('waits 10 to 15 s (upstream workerBackOffPeriod with jitter 0.5)', () => {
    expect([workerRetryDelayMs(0), workerRetryDelayMs(0.5), workerRetryDelayMs(0.75)]).toEqual([
      10_000, 12_500, 13_750,
    ]);
  });
});
