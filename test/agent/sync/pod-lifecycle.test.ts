/**
 * The pod workers' lifecycle rules taken from upstream pod_workers.go and HandlePodCleanups:
 * static pods of one full name start one at a time, in arrival order; a static pod killed before
 * it could start runs nothing; a pod created again with the same UID while it terminates is
 * started anew by housekeeping once finished (kubelet_restarted_pods_total); a worker is
 * `finished` only once its terminated step succeeded, and a failed one is tried again.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { PodWorkers, type PodSyncer } from '../../../src/agent/sync/pod-workers.js';
import { StaticPodStarts } from '../../../src/agent/sync/static-pod-starts.js';
import { stopTimeoutMs } from '../../../src/agent/sync/start-gates.js';
import { housekeeping, type HousekeepingDeps } from '../../../src/agent/sync/housekeeping.js';
import { PodManager } from '../../../src/agent/pods/pod-manager.js';
import { createLogger } from '../../../src/lib/logger.js';
import { SyncLoop, type SyncLoopDeps } from '../../../src/agent/sync/sync-loop.js';
import type { AdmitResult } from '../../../src/agent/admission/predicate.js';

const logger = createLogger({ level: 'fatal' });

const pod = (uid: string, name = uid, source?: 'file'): Pod =>
  ({
    metadata: {
      uid,
      name,
      namespace: 'kube-system',
      annotations: source ? { 'kubernetes.io/config.source': source } : {},
    },
    spec: { containers: [] },
  }) as unknown as Pod;

/** A syncer that records each step; `gate` holds a pod's terminating step until released. */
function recorder() {
  const steps: string[] = [];
  const gates = new Map<string, Promise<void>>();
  const failTerminated = new Set<string>();
  const syncer: PodSyncer = {
    syncPod: async (p) => {
      steps.push(`sync ${p.metadata.uid}`);
      return { terminal: false };
    },
    syncTerminatingPod: async (p) => {
      steps.push(`terminating ${p.metadata.uid}`);
      await gates.get(p.metadata.uid!);
    },
    syncTerminatedPod: async (p) => {
      steps.push(`terminated ${p.metadata.uid}`);
      if (failTerminated.has(p.metadata.uid!)) throw new Error('volume busy');
    },
  };
  const hold = (uid: string) => {
    let release!: () => void;
    gates.set(uid, new Promise<void>((r) => (release = r)));
    return () => release();
  };
  return { steps, syncer, hold, failTerminated };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('static pods sharing a full name', () => {
  it('start one at a time: an edited manifest’s pod waits until the old one has finished', async () => {
    const r = recorder();
    const w = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    w.update({ pod: pod('old', 'etcd', 'file'), kind: 'create' });
    await w.whenIdle();
    const release = r.hold('old');
    w.update({ pod: pod('old', 'etcd', 'file'), kind: 'kill' });
    w.update({ pod: pod('new', 'etcd', 'file'), kind: 'create' });
    await tick();
    w.update({ pod: pod('new', 'etcd', 'file'), kind: 'sync' });
    await tick();
    expect(r.steps).toEqual(['sync old', 'terminating old']);
    expect(w.stateOf('new')).toBe('sync');
    release();
    await w.whenIdle();
    expect(r.steps).toEqual(['sync old', 'terminating old', 'terminated old', 'sync new']);
  });

  it('a static pod killed before it could start runs nothing and is finished at once; the next in line starts', async () => {
    const r = recorder();
    const w = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    w.update({ pod: pod('a', 'etcd', 'file'), kind: 'create' });
    await w.whenIdle();
    const release = r.hold('a');
    w.update({ pod: pod('a', 'etcd', 'file'), kind: 'kill' });
    w.update({ pod: pod('b', 'etcd', 'file'), kind: 'create' });
    w.update({ pod: pod('c', 'etcd', 'file'), kind: 'create' });
    await tick();
    w.update({ pod: pod('b', 'etcd', 'file'), kind: 'kill' });
    await tick();
    expect(w.isFinished('b')).toBe(true);
    release();
    await w.whenIdle();
    expect(r.steps).toEqual(['sync a', 'terminating a', 'terminated a', 'sync c']);
  });

  it('pods from the apiserver are not held back by a name', async () => {
    const r = recorder();
    const w = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    w.update({ pod: pod('x', 'web'), kind: 'create' });
    await w.whenIdle();
    r.hold('x');
    w.update({ pod: pod('x', 'web'), kind: 'kill' });
    w.update({ pod: pod('y', 'web'), kind: 'create' });
    await tick();
    expect(r.steps).toEqual(['sync x', 'terminating x', 'sync y']);
  });

  it('the queue skips pods that terminated or went while waiting (StaticPodStarts)', () => {
    const s = new StaticPodStarts();
    for (const uid of ['a', 'b', 'c']) s.enqueue('n', uid);
    const live = new Set(['a', 'c']);
    expect(s.allow('n', 'c', (u) => live.has(u))).toBe(false);
    expect(s.allow('n', 'a', (u) => live.has(u))).toBe(true);
    expect(s.allow('n', 'c', (u) => live.has(u))).toBe(false);
    expect(s.release('n', 'a')).toEqual(['b', 'c']);
    expect(s.allow('n', 'c', (u) => live.has(u))).toBe(true);
    expect(s.allow('n', 'c', () => true)).toBe(true);
  });
});

describe('a pod created again with the same UID while it terminates', () => {
  function setup() {
    const r = recorder();
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    const podManager = new PodManager();
    const restarted: Pod[] = [];
    const deps = {
      podManager,
      workers,
      logger,
      activePods: () => podManager.getPods(),
      onRestartedPod: (p: Pod) => restarted.push(p),
      runtimeManager: { listRuntimePods: async () => [] },
      backoff: { gc: () => {} },
      clock: { now: () => Date.now() },
    } as unknown as HousekeepingDeps;
    return { r, workers, podManager, restarted, deps };
  }

  it('is started anew by housekeeping once its worker finished, and counted', async () => {
    const { r, workers, podManager, restarted, deps } = setup();
    const p = pod('s1', 'etcd', 'file');
    podManager.addOrUpdate(p);
    workers.update({ pod: p, kind: 'create' });
    await workers.whenIdle();
    // The manifest is removed, then put back while the pod terminates.
    const release = r.hold('s1');
    podManager.remove(p);
    workers.update({ pod: p, kind: 'kill' });
    await tick();
    podManager.addOrUpdate(p);
    workers.update({ pod: p, kind: 'create' });
    await housekeeping(deps);
    expect(restarted).toEqual([]);
    release();
    await workers.whenIdle();
    expect(workers.stateOf('s1')).toBe('terminated');
    await housekeeping(deps);
    await workers.whenIdle();
    expect(restarted.map((x) => x.metadata.uid)).toEqual(['s1']);
    expect(workers.stateOf('s1')).toBe('sync');
    expect(r.steps).toEqual(['sync s1', 'terminating s1', 'terminated s1', 'sync s1']);
  });

  it('also when put back after the worker finished but before housekeeping forgot it', async () => {
    const { r, workers, podManager, restarted, deps } = setup();
    const p = pod('s2', 'etcd', 'file');
    podManager.addOrUpdate(p);
    workers.update({ pod: p, kind: 'create' });
    await workers.whenIdle();
    podManager.remove(p);
    workers.update({ pod: p, kind: 'kill' });
    await workers.whenIdle();
    podManager.addOrUpdate(p);
    workers.update({ pod: p, kind: 'create' });
    await housekeeping(deps);
    await workers.whenIdle();
    expect(restarted).toHaveLength(1);
    expect(r.steps.at(-1)).toBe('sync s2');
  });

  it('a pod that simply finished (still desired, no restart asked) is left alone', async () => {
    const { workers, podManager, restarted, deps } = setup();
    const p = pod('done');
    podManager.addOrUpdate(p);
    workers.update({ pod: p, kind: 'create' });
    workers.update({ pod: p, kind: 'kill' });
    await workers.whenIdle();
    await housekeeping(deps);
    await workers.whenIdle();
    expect(restarted).toEqual([]);
    expect(workers.stateOf('done')).toBe('terminated');
  });
});

describe('finished', () => {
  it('only once the terminated step succeeded; a failed one is tried again by housekeeping while the pod is desired', async () => {
    const r = recorder();
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    const p = pod('f');
    r.failTerminated.add('f');
    workers.update({ pod: p, kind: 'create' });
    workers.update({ pod: p, kind: 'kill' });
    await workers.whenIdle();
    expect(workers.stateOf('f')).toBe('terminated');
    expect(workers.isFinished('f')).toBe(false);
    r.failTerminated.delete('f');
    workers.syncKnownPods(() => true);
    await workers.whenIdle();
    expect(workers.isFinished('f')).toBe(true);
    expect(r.steps.filter((s) => s === 'terminated f')).toHaveLength(2);
    workers.syncKnownPods(() => true);
    await workers.whenIdle();
    expect(r.steps.filter((s) => s === 'terminated f')).toHaveLength(2);
  });
});

describe('a pod that arrives Succeeded or Failed from the apiserver (a kubelet restart; upstream UpdatePod for a terminal pod first seen)', () => {
  const loop = (workers: PodWorkers, admitted: string[][]) =>
    new SyncLoop({
      podManager: new PodManager(),
      workers,
      logger,
      admit: (_p: Pod, others: Pod[]) => {
        admitted.push(others.map((o) => o.metadata.uid!));
        return { admit: true } as AdmitResult;
      },
    } as unknown as SyncLoopDeps);
  const withPhase = (p: Pod, phase: string): Pod =>
    ({ ...p, metadata: { ...p.metadata, creationTimestamp: '2026-01-01T00:00:00Z' }, status: { phase } }) as Pod;

  it('gets a worker that starts terminated: its release runs (never a sync), it holds nothing for admission, and it is finished', async () => {
    const r = recorder();
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    const admitted: string[][] = [];
    const l = loop(workers, admitted);
    const later = {
      ...pod('new'),
      metadata: { ...pod('new').metadata, creationTimestamp: '2026-01-02T00:00:00Z' },
    } as Pod;
    l.handle({
      op: 'ADD',
      source: 'api',
      pods: [withPhase(pod('done'), 'Succeeded'), withPhase(pod('failed'), 'Failed'), later],
    });
    await workers.whenIdle();
    expect(r.steps.sort()).toEqual(['sync new', 'terminated done', 'terminated failed']);
    expect(workers.stateOf('done')).toBe('terminated');
    expect(workers.isFinished('done')).toBe(true);
    expect(admitted).toEqual([[]]);
    expect(l.activePods().map((p) => p.metadata.uid)).toEqual(['new']);
    expect(l.isInactive('done')).toBe(false);
    // Deleted in the API later: its release runs again (idempotent), nothing is started.
    l.handle({
      op: 'UPDATE',
      source: 'api',
      pods: [
        {
          ...withPhase(pod('done'), 'Succeeded'),
          metadata: { ...pod('done').metadata, deletionTimestamp: 'x' },
        } as Pod,
      ],
    });
    await workers.whenIdle();
    expect(r.steps.filter((s) => s.endsWith(' done'))).toEqual(['terminated done', 'terminated done']);
  });

  it('a static pod keeps running whatever phase it carries (it may start again with the same UID)', async () => {
    const r = recorder();
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    loop(workers, []).handle({ op: 'ADD', source: 'file', pods: [withPhase(pod('s', 's', 'file'), 'Succeeded')] });
    await workers.whenIdle();
    expect(r.steps).toEqual(['sync s']);
  });
});

describe('a critical pod admitted by preemption (upstream killPodNow)', () => {
  const withGrace = (p: Pod, s: number): Pod =>
    ({ ...p, spec: { ...p.spec, terminationGracePeriodSeconds: s } }) as Pod;

  it('starts once its victims’ containers are stopped', async () => {
    const r = recorder();
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    const victim = withGrace(pod('v'), 5);
    workers.update({ pod: victim, kind: 'create' });
    await workers.whenIdle();
    const release = r.hold('v');
    workers.update({ pod: victim, kind: 'kill' });
    const late: string[][] = [];
    workers.startAfterStopped('c', [victim], (v) => late.push(v));
    workers.update({ pod: pod('c'), kind: 'create' });
    await tick();
    workers.update({ pod: pod('c'), kind: 'sync' });
    await tick();
    expect(r.steps).toEqual(['sync v', 'terminating v']);
    release();
    await workers.whenIdle();
    // Once its containers are stopped (upstream closes killPodNow's channel there, before the release).
    expect(r.steps.sort()).toEqual(['sync c', 'sync v', 'terminated v', 'terminating v']);
    expect(late).toEqual([]);
  });

  it('starts anyway once a victim’s grace period and half again (at least 10 s) has passed, telling which one is late', async () => {
    expect(stopTimeoutMs(30)).toBe(45_000);
    expect(stopTimeoutMs(2)).toBe(10_000);
    const r = recorder();
    let now = 1_000_000;
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: () => now });
    const victim = withGrace(pod('v'), 30);
    workers.update({ pod: victim, kind: 'create' });
    await workers.whenIdle();
    r.hold('v');
    workers.update({ pod: victim, kind: 'kill' });
    const late: string[][] = [];
    workers.startAfterStopped('c', [victim], (v) => late.push(v));
    workers.update({ pod: pod('c'), kind: 'create' });
    now += 44_000;
    workers.update({ pod: pod('c'), kind: 'sync' });
    await tick();
    expect(r.steps).not.toContain('sync c');
    now += 1_000;
    workers.update({ pod: pod('c'), kind: 'sync' });
    await tick();
    expect(r.steps).toContain('sync c');
    expect(late).toEqual([['v']]);
  });
});

describe('an admission that waits (a device plugin answering Allocate)', () => {
  it("holds the update's later pods and every later update, in order, until it is decided", async () => {
    const r = recorder();
    const workers = new PodWorkers({ syncer: r.syncer, logger, now: Date.now });
    const asked: { uid: string; others: string[] }[] = [];
    let decide!: (result: AdmitResult) => void;
    const rejected: string[] = [];
    const l = new SyncLoop({
      podManager: new PodManager(),
      workers,
      logger,
      admit: (p: Pod, others: Pod[]) => {
        asked.push({ uid: p.metadata.uid!, others: others.map((o) => o.metadata.uid!) });
        if (p.metadata.uid !== 'device') return { admit: true } as AdmitResult;
        return new Promise<AdmitResult>((resolve) => (decide = resolve));
      },
      onRejected: (p: Pod) => rejected.push(p.metadata.uid!),
    } as unknown as SyncLoopDeps);
    const at = (p: Pod, second: number): Pod =>
      ({ ...p, metadata: { ...p.metadata, creationTimestamp: `2026-01-01T00:00:0${second}Z` } }) as Pod;
    l.handle({ op: 'ADD', source: 'api', pods: [at(pod('device'), 1), at(pod('after'), 2)] });
    l.handle({ op: 'ADD', source: 'api', pods: [at(pod('later'), 3)] });
    l.handle({ op: 'REMOVE', source: 'api', pods: [at(pod('device'), 1)] });
    await workers.whenIdle();
    expect(asked.map((a) => a.uid)).toEqual(['device']);
    expect(r.steps).toEqual([]);
    decide({ admit: false, reason: 'UnexpectedAdmissionError', message: 'Allocate failed' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    await workers.whenIdle();
    expect(asked).toEqual([
      { uid: 'device', others: [] },
      { uid: 'after', others: [] },
      { uid: 'later', others: ['after'] },
    ]);
    expect(rejected).toEqual(['device']);
    expect(r.steps.sort()).toEqual(['sync after', 'sync later']);
    expect(l.isInactive('device')).toBe(false);
  });
});
