import { describe, expect, it } from 'vitest';
import { createdByOneSync } from '../../../src/agent/sync/pod-sync.js';
import { emptyRuntimeStatus, type PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';
import type { StepResult } from '../../../src/agent/runtime/step-result.js';

describe('createdByOneSync (when the status after a sync can be read by ID)', () => {
  const empty = emptyRuntimeStatus('u', 'p', 'ns');
  const sandbox = { id: 's1', ready: true, createdAt: 5, attempt: 0, ip: '10.0.0.2' };
  const created: StepResult = { action: 'CreatePodSandbox', target: 's1', ok: true, sandbox };
  const started = (name: string, id?: string): StepResult => ({ action: 'StartContainer', target: name, ok: true, id });

  it('gives the sandbox and the started containers of a pod that had nothing', () => {
    expect(createdByOneSync(empty, [created, started('init', 'c0')])).toEqual({ sandbox, containerIds: ['c0'] });
    expect(createdByOneSync(empty, [created, started('a', 'c1'), started('b', 'c2')])).toEqual({
      sandbox,
      containerIds: ['c1', 'c2'],
    });
    expect(createdByOneSync(empty, [created])).toEqual({ sandbox, containerIds: [] });
  });

  it('gives nothing when the runtime had something of the pod before', () => {
    const before: PodRuntimeStatus = { ...empty, sandboxes: [{ ...sandbox, id: 's0', ready: false }] };
    expect(createdByOneSync(before, [created, started('a', 'c1')])).toBeUndefined();
  });

  it('gives nothing when a step failed (it may have left a container) or was not a create', () => {
    const failed: StepResult = { action: 'StartContainer', target: 'b', ok: false, reason: 'RunContainerError' };
    expect(createdByOneSync(empty, [created, started('a', 'c1'), failed])).toBeUndefined();
    const held: StepResult = { action: 'StartContainer', target: 'b', ok: false, reason: 'CrashLoopBackOff' };
    expect(createdByOneSync(empty, [created, held])).toBeUndefined();
    expect(createdByOneSync(empty, [started('a', 'c1')])).toBeUndefined();
    expect(createdByOneSync(empty, [{ ...created, sandbox: undefined }, started('a', 'c1')])).toBeUndefined();
    expect(createdByOneSync(empty, [created, started('a')])).toBeUndefined();
    expect(createdByOneSync(empty, [created, { action: 'KillContainer', target: 'a', ok: true }])).toBeUndefined();
    expect(createdByOneSync(empty, [])).toBeUndefined();
  });
});
