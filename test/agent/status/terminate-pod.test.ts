/**
 * A released pod's final status, as upstream's getPhase(podIsTerminal) and TerminatePod give it
 * (test/e2e_node/deleted_pods_test.go: a deleted pod ends Succeeded or Failed whatever its
 * restart policy; a static pod keeps its phase).
 */
import { describe, expect, it } from 'vitest';
import type { ContainerStatus, Pod, PodStatus } from '../../../src/api/types.js';
import { terminatePodStatus } from '../../../src/agent/status/terminate-pod.js';
import { podPhase } from '../../../src/agent/status/generate-pod-status.js';

const pod = (spec: Partial<Pod['spec']> = {}, annotations: Record<string, string> = {}): Pod =>
  ({
    metadata: { name: 'p', namespace: 'd', uid: 'u', annotations },
    spec: { containers: [{ name: 'main', image: 'i' }], ...spec },
  }) as Pod;
const staticPod = pod({}, { 'kubernetes.io/config.source': 'file' });
const exited = (name: string, exitCode: number): ContainerStatus =>
  ({
    name,
    state: { terminated: { exitCode, reason: exitCode ? 'Error' : 'Completed' } },
    lastState: {},
    ready: false,
  }) as ContainerStatus;
const waiting = (name: string, reason = 'ErrImagePull', last?: ContainerStatus['lastState']): ContainerStatus =>
  ({ name, state: { waiting: { reason } }, lastState: last ?? {}, ready: false }) as ContainerStatus;
const running = (name: string): ContainerStatus =>
  ({ name, state: { running: { startedAt: 'x' } }, lastState: {}, ready: true }) as ContainerStatus;

describe('podPhase of a terminal pod', () => {
  it.each(['Always', 'OnFailure', 'Never'] as const)(
    'restartPolicy %s: all stopped with 0 → Succeeded, any failure → Failed',
    (restartPolicy) => {
      const p = pod({ restartPolicy });
      expect(podPhase(p, [], [exited('main', 0)], true)).toBe('Succeeded');
      expect(podPhase(p, [], [exited('main', 137)], true)).toBe('Failed');
      expect(
        podPhase(
          p,
          [],
          [waiting('main', 'CrashLoopBackOff', { terminated: { exitCode: 1 } } as ContainerStatus['lastState'])],
          true,
        ),
      ).toBe('Failed');
    },
  );

  it('not terminal, or static: the restart policy decides as before', () => {
    expect(podPhase(pod(), [], [exited('main', 137)])).toBe('Running');
    expect(podPhase(staticPod, [], [exited('main', 0)], true)).toBe('Running');
  });
});

describe('terminatePodStatus', () => {
  const base = (
    containerStatuses: ContainerStatus[],
    phase: PodStatus['phase'],
    init?: ContainerStatus[],
  ): PodStatus => ({
    phase,
    containerStatuses,
    ...(init ? { initContainerStatuses: init } : {}),
  });

  it('a pod deleted while pending (image never pulled) is Failed; its container terminated ContainerStatusUnknown 137', () => {
    const st = terminatePodStatus(pod(), base([waiting('main')], 'Pending'));
    expect(st.phase).toBe('Failed');
    expect(st.containerStatuses![0].state).toEqual({
      terminated: {
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was terminated',
        exitCode: 137,
      },
    });
  });

  it('keeps the terminated states and a terminal phase as they are', () => {
    const st = base([exited('main', 0)], 'Succeeded');
    expect(terminatePodStatus(pod(), st)).toEqual(st);
  });

  it('a container still reported running is taken as failed, and the pod Failed', () => {
    const st = terminatePodStatus(pod(), base([running('main')], 'Running'));
    expect(st.phase).toBe('Failed');
    expect(st.containerStatuses![0].state.terminated?.exitCode).toBe(137);
  });

  it('before initialization: only the init containers that tried to start are marked, the regular ones stay waiting', () => {
    const p = pod({
      initContainers: [
        { name: 'i1', image: 'x' },
        { name: 'i2', image: 'x' },
      ] as Pod['spec']['containers'],
    });
    const st = terminatePodStatus(
      p,
      base([waiting('main', 'PodInitializing')], 'Pending', [running('i1'), waiting('i2', 'PodInitializing')]),
    );
    expect(st.initContainerStatuses!.map((c) => Object.keys(c.state)[0])).toEqual(['terminated', 'waiting']);
    expect(st.containerStatuses![0].state.waiting?.reason).toBe('PodInitializing');
    expect(st.phase).toBe('Failed');
  });

  it('a static pod keeps its phase (it may start again with the same UID)', () => {
    expect(terminatePodStatus(staticPod, base([exited('main', 0)], 'Running')).phase).toBe('Running');
  });
});
