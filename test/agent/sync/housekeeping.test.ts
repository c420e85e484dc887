/**
 * Housekeeping's runtime pods that no source wants and no worker owns (upstream
 * SyncTerminatingRuntimePod): stopped with upstream's grace period of 1 s (2 s, the minimum) and removed; one whose
 * stop fails is left as it is (nothing removed under a running container) and tried again next pass.
 */
import { describe, expect, it } from 'vitest';
import { housekeeping, type HousekeepingDeps } from '../../../src/agent/sync/housekeeping.js';
import { PodWorkers } from '../../../src/agent/sync/pod-workers.js';
import { PodManager } from '../../../src/agent/pods/pod-manager.js';
import { emptyRuntimeStatus, type PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';
import { KubeletError } from '../../../src/lib/errors.js';
import { createLogger } from '../../../src/lib/logger.js';

const logger = createLogger({ level: 'fatal' });

function setup() {
  const calls: string[] = [];
  const events: string[] = [];
  let stopFails = true;
  const status: PodRuntimeStatus = {
    ...emptyRuntimeStatus('orphan', 'left', 'ns'),
    sandboxes: [{ id: 's1', ready: true, createdAt: 1, attempt: 0, ip: '' }],
    containers: [{ id: 'c1', name: 'main', state: 'running' }] as PodRuntimeStatus['containers'],
  };
  const runtime = {
    stopContainer: async (id: string, timeout: number) => {
      calls.push(`stop ${id} ${timeout}`);
      if (stopFails) throw new KubeletError('Unavailable', 'StopContainer: shim gone');
    },
    stopPodSandbox: async (id: string) => void calls.push(`stop ${id}`),
    removeContainer: async (id: string) => void calls.push(`remove ${id}`),
    removePodSandbox: async (id: string) => void calls.push(`remove ${id}`),
  };
  const deps = {
    podManager: new PodManager(),
    workers: new PodWorkers({ syncer: {} as never, logger, now: Date.now }),
    logger,
    runtime,
    runtimeManager: {
      listRuntimePods: async () => [{ uid: 'orphan', name: 'left', namespace: 'ns', sandboxes: [], containers: [] }],
      getPodStatus: async () => status,
    },
    backoff: { gc: () => {} },
    clock: { now: () => Date.now() },
    podLogsDir: '/nonexistent-tskubelet-test-logs',
    events: {
      record: (ref: { name: string }, type: string, reason: string, message: string) =>
        events.push(`${ref.name} ${type} ${reason} ${message}`),
    },
  } as unknown as HousekeepingDeps;
  return { deps, calls, events, stopSucceeds: () => (stopFails = false) };
}

describe('housekeeping of runtime pods nobody wants', () => {
  it('stops them with the minimum grace period; removes nothing of one whose stop failed, and removes it once a stop succeeds', async () => {
    const { deps, calls, events, stopSucceeds } = setup();
    await housekeeping(deps);
    expect(calls).toEqual(['stop c1 2', 'stop s1']);
    // Reported against the pod as the runtime knows it, as upstream's SyncTerminatingRuntimePod does (this double's
    // error has no gRPC status, so no grpc-go text).
    expect(events).toEqual([
      'left Warning FailedKillPod error killing pod: failed to "KillContainer" for "main" with KillContainerError: ' +
        '"StopContainer: shim gone"',
    ]);
    calls.length = 0;
    stopSucceeds();
    await housekeeping(deps);
    expect(calls).toEqual(['stop c1 2', 'stop s1', 'remove c1', 'stop s1', 'remove s1']);
  });
});
