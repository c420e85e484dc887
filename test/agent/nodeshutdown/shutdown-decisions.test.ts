/**
 * The node shutdown manager's decisions: which configuration turns it on (upstream NewManager and its gates), which
 * group a pod stops in and with what grace, the state file in upstream's format, the busctl lines read, Go's
 * durations in its messages, and its wait for logind to take up the override (five reads, then upstream's error).
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { realClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { nodeShutdownOf, type ShutdownGroup } from '../../../src/agent/runtime/shutdown-groups.js';
import {
  goDuration,
  groupGraceSeconds,
  NodeShutdownManager,
  podsByGroup,
} from '../../../src/agent/nodeshutdown/node-shutdown-manager.js';
import { inhibitorPids, logindOverride, prepareForShutdownOf } from '../../../src/agent/nodeshutdown/logind.js';
import type { Logind } from '../../../src/agent/nodeshutdown/logind.js';
import { decodeShutdownState, encodeShutdownState } from '../../../src/agent/nodeshutdown/shutdown-state.js';

const config = (o: Partial<Parameters<typeof nodeShutdownOf>[0]> = {}) => ({
  shutdownGracePeriod: '0s',
  shutdownGracePeriodCriticalPods: '0s',
  shutdownGracePeriodByPodPriority: [],
  ...o,
});
const pod = (priority?: number, grace?: number): Pod =>
  ({
    metadata: { name: `p${priority}`, namespace: 'd', uid: `u${priority}` },
    spec: { containers: [], priority, terminationGracePeriodSeconds: grace },
  }) as unknown as Pod;

/** A manager on `logind` with no pods (its start and its lock are what is tested). */
const managerOn = (logind: Logind, groups: ShutdownGroup[]) =>
  new NodeShutdownManager({
    groups,
    logind,
    activePods: () => [],
    killPod: () => {},
    stopped: () => true,
    syncNodeStatus: () => {},
    events: { record: () => {} },
    node: { kind: 'Node', name: 'n' },
    clock: realClock,
    logger: silentLogger,
  });

describe('graceful node shutdown decisions', () => {
  it('on with a grace period (the two periods, or the priority groups with their gate), off without one or with its gate off', () => {
    expect(nodeShutdownOf(config())).toBeUndefined();
    expect(nodeShutdownOf(config({ shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' }))).toEqual({
      groups: [
        { priority: 0, graceSeconds: 20 },
        { priority: 2_000_000_000, graceSeconds: 10 },
      ],
      recordTimes: true,
    });
    const byPriority = [
      { priority: 100000, shutdownGracePeriodSeconds: 10 },
      { priority: 0, shutdownGracePeriodSeconds: 5 },
    ];
    expect(nodeShutdownOf(config({ shutdownGracePeriodByPodPriority: byPriority }))?.groups).toEqual([
      { priority: 0, graceSeconds: 5 },
      { priority: 100000, graceSeconds: 10 },
    ]);
    // Without GracefulNodeShutdownBasedOnPodPriority: the two periods only, and no times kept.
    expect(
      nodeShutdownOf(
        config({
          shutdownGracePeriodByPodPriority: byPriority,
          featureGates: { GracefulNodeShutdownBasedOnPodPriority: false },
        }),
      ),
    ).toBeUndefined();
    expect(
      nodeShutdownOf(
        config({ shutdownGracePeriod: '10s', featureGates: { GracefulNodeShutdownBasedOnPodPriority: false } }),
      )?.recordTimes,
    ).toBe(false);
    expect(
      nodeShutdownOf(config({ shutdownGracePeriod: '10s', featureGates: { GracefulNodeShutdown: false } })),
    ).toBeUndefined();
  });

  it("groups pods as upstream's groupByPriority and caps each pod's grace at its group's", () => {
    const groups = [
      { priority: 0, graceSeconds: 20 },
      { priority: 1000, graceSeconds: 5 },
      { priority: 2_000_000_000, graceSeconds: 10 },
    ];
    const pods = [pod(undefined), pod(-5), pod(999), pod(1000), pod(1500), pod(2_000_000_000), pod(2_000_001_000)];
    expect(podsByGroup(groups, pods).map((g) => g.map((p) => p.spec.priority))).toEqual([
      [undefined, -5, 999],
      [1000, 1500],
      [2_000_000_000, 2_000_001_000],
    ]);
    expect(groupGraceSeconds(pod(0, 30), groups[0])).toBe(20);
    expect(groupGraceSeconds(pod(0, 3), groups[0])).toBe(3);
    expect(groupGraceSeconds(pod(0, 0), groups[0])).toBe(0);
    expect(groupGraceSeconds(pod(0), groups[1])).toBe(5);
  });

  it("keeps the state in Go's JSON of {startTime, endTime}, the zero time for an end not reached", () => {
    const startMs = Date.parse('2026-11-29T10:00:00.5Z');
    expect(encodeShutdownState({ startMs })).toBe(
      '{"startTime":"2026-11-29T10:00:00.5Z","endTime":"0001-01-01T00:00:00Z"}',
    );
    expect(decodeShutdownState(encodeShutdownState({ startMs }))).toEqual({ startMs, endMs: undefined });
    expect(
      decodeShutdownState('{"startTime":"2026-11-29T10:00:00.123456789+01:00","endTime":"2026-11-29T09:00:05Z"}'),
    ).toEqual({ startMs: Date.parse('2026-11-29T09:00:00.123Z'), endMs: Date.parse('2026-11-29T09:00:05Z') });
    expect(decodeShutdownState('{"startTime":"yesterday"}')).toBeUndefined();
    expect(decodeShutdownState('not json')).toBeUndefined();
  });

  it("reads logind's answers: PrepareForShutdown's argument, the kubelet's inhibitors; writes upstream's override", () => {
    expect(prepareForShutdownOf([true])).toBe(true);
    expect(prepareForShutdownOf([false])).toBe(false);
    expect(prepareForShutdownOf(['yes'])).toBeUndefined();
    expect(prepareForShutdownOf([])).toBeUndefined();
    // ListInhibitors' a(ssssuu): what, who, why, mode, uid, pid.
    const list = [
      [
        ['shutdown', 'kubelet', 'why', 'delay', 0, 42],
        ['sleep', 'kubelet', 'why', 'delay', 0, 43],
        ['shutdown', 'other', 'why', 'block', 0, 44],
      ],
    ];
    expect(inhibitorPids(list, 'kubelet', 'shutdown')).toEqual([42]);
    expect(inhibitorPids([], 'kubelet', 'shutdown')).toEqual([]);
    expect(logindOverride(30_000)).toBe('# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=30\n');
  });

  it("prints durations as Go's Duration.String()", () => {
    expect([0, 500, 5000, 30_000, 60_000, 90_000, 3_600_000, 3_725_000].map(goDuration)).toEqual([
      '0s',
      '500ms',
      '5s',
      '30s',
      '1m0s',
      '1m30s',
      '1h0m0s',
      '1h2m5s',
    ]);
  });

  it("waits for logind to take up the override with five reads, then fails with upstream's message", async () => {
    const calls: string[] = [];
    const logind: Logind = {
      inhibitDelayMs: () => (calls.push('read'), Promise.resolve(5000)),
      overrideInhibitDelay: (ms) => (calls.push(`override ${ms}`), Promise.resolve()),
      reloadConfig: () => (calls.push('reload'), Promise.resolve()),
      inhibitShutdown: () => Promise.reject(new Error('not reached')),
      watchShutdown: () => Promise.reject(new Error('not reached')),
    };
    const manager = managerOn(logind, [
      { priority: 0, graceSeconds: 20 },
      { priority: 2_000_000_000, graceSeconds: 10 },
    ]);
    await expect(manager.start(new AbortController().signal)).rejects.toThrow(
      'node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 30s (ShutdownGracePeriod), current value is 5s',
    );
    expect(calls).toEqual(['read', 'override 30000', 'reload', 'read', 'read', 'read', 'read', 'read']);
  });

  it('a lock still being taken when the kubelet stops is released once it is held', async () => {
    let grant: (() => void) | undefined;
    let released = 0;
    const logind: Logind = {
      inhibitDelayMs: () => Promise.resolve(60_000),
      overrideInhibitDelay: () => Promise.resolve(),
      reloadConfig: () => Promise.resolve(),
      inhibitShutdown: () => new Promise((resolve) => (grant = () => resolve({ release: () => released++ }))),
      watchShutdown: () => Promise.resolve({ ended: new Promise<void>(() => {}), stop: () => {} }),
    };
    const manager = managerOn(logind, [{ priority: 0, graceSeconds: 10 }]);
    const abort = new AbortController();
    const started = manager.start(abort.signal);
    while (!grant) await new Promise((r) => setTimeout(r, 1));
    abort.abort();
    grant();
    await started;
    expect(released).toBe(1);
  });
});
