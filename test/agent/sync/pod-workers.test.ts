/**
 * Pod workers: a worker's first sync is told so, with the time since which nothing has acted for
 * its pod (the last time any worker was dropped), and only its first; idleness is tracked.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { PodWorkers, type PodSyncer } from '../../../src/agent/sync/pod-workers.js';
import { createLogger } from '../../../src/lib/logger.js';

const pod = (uid: string): Pod => ({ metadata: { uid, name: uid, namespace: 'default' }, spec: { containers: [] } }) as unknown as Pod;

const workersOf = (syncer: PodSyncer) => new PodWorkers({ syncer, logger: createLogger({ level: 'fatal' }), now: () => Date.now() });

function recordingSyncer(o: { failFirst?: boolean } = {}) {
  const syncs: { uid: string; first?: { quietSinceMs: number } }[] = [];
  let failed = false;
  const syncer: PodSyncer = {
    syncPod: async (p, first) => {
      syncs.push({ uid: p.metadata.uid!, first });
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
  it("tells a worker's first sync that it is the first, and no later one", async () => {
    expect(await createThenSync()).toEqual([
      { uid: 'a', first: { quietSinceMs: 0 } },
      { uid: 'a', first: undefined },
    ]);
  });

  it('does not call a retry after a failed first sync a first sync (it may have created things)', async () => {
    expect((await createThenSync({ failFirst: true })).map((s) => s.first)).toEqual([{ quietSinceMs: 0 }, undefined]);
  });

  it('dates a new worker’s quiet time from the last worker dropped, so a re-added pod is not taken for new', async () => {
    const r = recordingSyncer();
    const w = workersOf(r.syncer);
    w.update({ pod: pod('a'), kind: 'create' });
    await w.whenIdle();
    w.update({ pod: pod('a'), kind: 'kill' });
    await w.whenIdle();
    const before = Date.now();
    w.forget('a');
    expect(w.stateOf('a')).toBeUndefined();
    w.update({ pod: pod('a'), kind: 'create' });
    await w.whenIdle();
    const again = r.syncs.at(-1)!;
    expect(again.uid).toBe('a');
    expect(again.first!.quietSinceMs).toBeGreaterThanOrEqual(before);
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
