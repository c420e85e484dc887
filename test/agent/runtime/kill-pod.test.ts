/**
 * killPod's steps and how their failures are worded (upstream killPodWithSyncResult and
 * PodSyncResult.Error()): one step for the pod's sandboxes, named by the pod's UID; a container or
 * sandbox the runtime no longer has counts as stopped.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import { KubeletError } from '../../../src/lib/errors.js';
import { killFailure, killPod } from '../../../src/agent/runtime/kill-pod.js';
import { emptyRuntimeStatus, type PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';
import type { StepResult } from '../../../src/agent/runtime/step-result.js';

const pod = {
  metadata: { uid: 'pod-uid', name: 'p', namespace: 'ns' },
  spec: { containers: [{ name: 'a' }, { name: 'b' }], terminationGracePeriodSeconds: 1 },
} as unknown as Pod;

const status: PodRuntimeStatus = {
  ...emptyRuntimeStatus('pod-uid', 'p', 'ns'),
  sandboxes: [{ id: 's1', ready: true, createdAt: 1, attempt: 0, ip: '' }],
  containers: ['a', 'b'].map((name) => ({ id: `c-${name}`, name, state: 'running' })) as PodRuntimeStatus['containers'],
};

/** A runtime whose stops answer as `answers` says (by container or sandbox ID; absent: success). */
const runtimeAnswering = (answers: Record<string, Error>) =>
  ({
    stopContainer: async (id: string) => {
      if (answers[id]) throw answers[id];
    },
    stopPodSandbox: async (id: string) => {
      if (answers[id]) throw answers[id];
    },
  }) as unknown as RuntimeService;

describe('killPod', () => {
  it('a container or sandbox already gone (NotFound) is stopped; other failures are steps that failed', async () => {
    const gone = new KubeletError('NotFound', 'StopContainer: not found');
    const results = await killPod(runtimeAnswering({ 'c-a': gone, s1: new KubeletError('NotFound', 'gone') }), pod, {
      status,
    });
    expect(results.every((r) => r.ok)).toBe(true);
    expect(killFailure(results)).toBeUndefined();
    const failed = await killPod(
      runtimeAnswering({ 'c-b': new KubeletError('Unavailable', 'StopContainer: down') }),
      pod,
      {
        status,
      },
    );
    expect(failed.filter((r) => !r.ok)).toEqual([
      { action: 'KillContainer', target: 'b', ok: false, reason: 'KillContainerError', message: 'StopContainer: down' },
    ]);
    expect(failed.find((r) => r.action === 'KillPodSandbox')).toEqual({
      action: 'KillPodSandbox',
      target: 'pod-uid',
      ok: true,
    });
  });
});

describe('killFailure', () => {
  const fail = (action: StepResult['action'], target: string, reason: string, message: string): StepResult => ({
    action,
    target,
    ok: false,
    reason,
    message,
  });

  it('words one failed step as upstream, several as a Go aggregate, none as undefined', () => {
    const container = fail('KillContainer', 'main', 'KillContainerError', 'rpc error: "x"');
    const sandbox = fail('KillPodSandbox', 'pod-uid', 'KillPodSandboxError', 'down');
    expect(killFailure([container, { action: 'KillContainer', target: 'side', ok: true }])).toBe(
      'failed to "KillContainer" for "main" with KillContainerError: "rpc error: \\"x\\""',
    );
    expect(killFailure([container, sandbox])).toBe(
      '[failed to "KillContainer" for "main" with KillContainerError: "rpc error: \\"x\\"", ' +
        'failed to "KillPodSandbox" for "pod-uid" with KillPodSandboxError: "down"]',
    );
    expect(killFailure([{ action: 'KillContainer', target: 'main', ok: true }])).toBeUndefined();
  });
});
