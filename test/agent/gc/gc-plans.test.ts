/** Garbage-collection decisions: the container/sandbox plan and image GC by disk usage. */
import { describe, expect, it } from 'vitest';
import { containerGcPlan, defaultContainerGcPolicy } from '../../../src/agent/gc/container-gc-plan.js';
import { bytesToFree, imagesToFree, imagesTooOld, type ImageRecord } from '../../../src/agent/gc/image-gc.js';
import type { RuntimePod } from '../../../src/agent/runtime/runtime-manager.js';

const ms = (t: number) => t * 1e6;
const ctr = (id: string, name: string, createdMs: number, state = 'CONTAINER_EXITED', sandbox = 's1') =>
  ({
    id,
    pod_sandbox_id: sandbox,
    metadata: { name },
    image: { image: 'i' },
    image_ref: 'i',
    state,
    created_at: ms(createdMs),
    labels: { 'io.kubernetes.container.name': name },
    annotations: {},
  }) as never;
const sbx = (id: string, createdMs: number, ready = false) =>
  ({
    id,
    state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    created_at: ms(createdMs),
    metadata: { name: 'p', namespace: 'd', uid: 'u', attempt: 0 },
    labels: {},
    annotations: {},
  }) as never;
const rpod = (uid: string, containers: never[], sandboxes: never[] = []): RuntimePod => ({
  uid,
  name: uid,
  namespace: 'd',
  containers,
  sandboxes,
});

describe('container GC plan', () => {
  it('keeps maxPerPodContainer newest dead per container of a wanted pod; running ones are never chosen', () => {
    const p = rpod('a', [
      ctr('r', 'main', 400, 'CONTAINER_RUNNING'),
      ctr('d3', 'main', 300),
      ctr('d2', 'main', 200),
      ctr('d1', 'main', 100),
      ctr('x1', 'side', 100),
    ]);
    expect(containerGcPlan([p], () => true, 1000, defaultContainerGcPolicy).containers.sort()).toEqual(['d1', 'd2']);
  });
  it('removes every dead container of a pod no source wants; respects minAge', () => {
    const p = rpod('gone', [ctr('old', 'main', 100), ctr('new', 'main', 950)]);
    expect(containerGcPlan([p], () => false, 1000, { ...defaultContainerGcPolicy, minAgeMs: 100 }).containers).toEqual([
      'old',
    ]);
  });
  it('caps the total with maxContainers, oldest first', () => {
    const pods = [
      rpod('a', [ctr('a1', 'm', 100), ctr('a2', 'm', 500)]),
      rpod('b', [ctr('b1', 'm', 200), ctr('b2', 'm', 600)]),
    ];
    const plan = containerGcPlan(pods, () => true, 1000, { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 1 });
    expect(plan.containers.sort()).toEqual(['a1', 'a2', 'b1']);
  });
  it('removes not-ready sandboxes without containers, keeping the newest of a wanted pod', () => {
    const p = rpod(
      'a',
      [ctr('c', 'main', 300, 'CONTAINER_RUNNING', 's3')],
      [sbx('s1', 100), sbx('s2', 200), sbx('s3', 300, true)],
    );
    expect(containerGcPlan([p], () => true, 1000, defaultContainerGcPolicy).sandboxes.sort()).toEqual(['s1', 's2']);
    const q = rpod('a', [], [sbx('s1', 100), sbx('s2', 200)]);
    expect(containerGcPlan([q], () => true, 1000, defaultContainerGcPolicy).sandboxes).toEqual(['s1']);
    expect(containerGcPlan([q], () => false, 1000, defaultContainerGcPolicy).sandboxes.sort()).toEqual(['s1', 's2']);
  });
});

describe('image GC', () => {
  const policy = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 60_000 };
  it('frees down to the low threshold once usage reaches the high one', () => {
    expect(bytesToFree(1000, 200, policy)).toBe(0);
    expect(bytesToFree(1000, 150, policy)).toBe(50);
    expect(bytesToFree(1000, 100, policy)).toBe(100);
    expect(bytesToFree(1000, 0, { ...policy, highThresholdPercent: 100 })).toBe(0);
  });
  it('picks unused, unpinned images older than minAge, least recently used first, until enough', () => {
    const rec = (first: number, last: number, size: number, pinned = false): ImageRecord => ({
      firstDetectedMs: first,
      lastUsedMs: last,
      size,
      pinned,
    });
    const records = new Map([
      ['inuse', rec(0, 900, 500)],
      ['pinned', rec(0, 0, 500, true)],
      ['young', rec(990_000, 0, 500)],
      ['lru', rec(0, 100, 30)],
      ['mru', rec(0, 800, 30)],
      ['mid', rec(0, 500, 30)],
    ]);
    expect(imagesToFree(records, new Set(['inuse']), 50, 1_000_000, 60_000)).toEqual(['lru', 'mid']);
    expect(imagesToFree(records, new Set(['inuse']), 10_000, 1_000_000, 60_000)).toEqual(['lru', 'mid', 'mru']);
  });
});

describe('image GC by age (imageMaximumGCAge)', () => {
  it('picks unused, unpinned images last used longer ago than the maximum age; never used counts as unused since ever', () => {
    const rec = (lastUsedMs: number, pinned = false): ImageRecord => ({
      firstDetectedMs: 0,
      lastUsedMs,
      size: 1,
      pinned,
    });
    const records = new Map([
      ['old', rec(1_000)],
      ['recent', rec(900_000)],
      ['never', rec(0)],
      ['pinned', rec(0, true)],
      ['inuse', rec(0)],
    ]);
    expect(imagesTooOld(records, new Set(['inuse']), 1_000_000, 600_000)).toEqual(['old', 'never']);
  });
});
