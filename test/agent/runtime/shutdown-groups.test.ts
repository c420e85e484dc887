/** Graceful shutdown of the in-process runtime's pods: upstream's groups by priority and their grace periods. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import {
  groupIndex,
  shutdownGraceSeconds,
  shutdownGroups,
  SYSTEM_CRITICAL_PRIORITY,
} from '../../../src/agent/runtime/shutdown.js';

const pod = (grace: number, priority?: number): Pod => ({
  metadata: { name: 'p', namespace: 'd', uid: 'u' },
  spec: { containers: [], terminationGracePeriodSeconds: grace, ...(priority !== undefined ? { priority } : {}) },
});

describe('shutdown groups', () => {
  it('without shutdownGracePeriod every pod keeps its own grace period', () => {
    expect(shutdownGroups(0, 0)).toEqual([]);
    expect(shutdownGraceSeconds(pod(45), undefined)).toBe(45);
  });
  it('splits shutdownGracePeriod between regular and critical pods (upstream migrateConfig)', () => {
    const groups = shutdownGroups(30_000, 10_000);
    expect(groups).toEqual([
      { priority: 0, graceSeconds: 20 },
      { priority: SYSTEM_CRITICAL_PRIORITY, graceSeconds: 10 },
    ]);
    expect(shutdownGraceSeconds(pod(45), groups[0])).toBe(20);
    expect(shutdownGraceSeconds(pod(5), groups[0])).toBe(5);
    // No critical-pod period: critical pods get none, as upstream.
    expect(shutdownGroups(30_000, 0)[1]).toEqual({ priority: SYSTEM_CRITICAL_PRIORITY, graceSeconds: 0 });
  });
  it('puts a pod in the highest group at or below its priority, else the lowest', () => {
    const groups = shutdownGroups(30_000, 10_000);
    expect(groupIndex(groups, 0)).toBe(0);
    expect(groupIndex(groups, -5)).toBe(0);
    expect(groupIndex(groups, 1_000_000_000)).toBe(0);
    expect(groupIndex(groups, SYSTEM_CRITICAL_PRIORITY)).toBe(1);
    expect(groupIndex(groups, SYSTEM_CRITICAL_PRIORITY + 1000)).toBe(1);
  });
  it('shutdownGracePeriodByPodPriority gives the groups itself, lowest priority first', () => {
    const groups = shutdownGroups(0, 0, [
      { priority: 100_000, graceSeconds: 20 },
      { priority: 0, graceSeconds: 10 },
      { priority: SYSTEM_CRITICAL_PRIORITY, graceSeconds: 5 },
    ]);
    expect(groups.map((g) => g.priority)).toEqual([0, 100_000, SYSTEM_CRITICAL_PRIORITY]);
    expect([
      groupIndex(groups, 50),
      groupIndex(groups, 100_000),
      groupIndex(groups, 150_000),
      groupIndex(groups, -1),
    ]).toEqual([0, 1, 1, 0]);
  });
});
