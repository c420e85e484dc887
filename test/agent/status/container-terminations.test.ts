/** Which terminations a new pod status shows for the first time (kubelet_terminated_containers_total). */
import { describe, expect, it } from 'vitest';
import type { ContainerStatus, PodStatus } from '../../../src/api/types.js';
import { newContainerTerminations } from '../../../src/agent/status/container-terminations.js';

const running = (name: string, id: string): ContainerStatus => ({
  name,
  state: { running: { startedAt: '2026-11-30T00:00:00Z' } },
  lastState: {},
  ready: true,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  containerID: `containerd://${id}`,
});
const ended = (name: string, id: string, exitCode: number, reason: string): ContainerStatus => ({
  ...running(name, id),
  state: { terminated: { exitCode, reason, containerID: `containerd://${id}` } },
  ready: false,
});

describe('newContainerTerminations', () => {
  it('counts a container that ended since the previous status, with its list as the container type', () => {
    const previous: PodStatus = { phase: 'Running', containerStatuses: [running('main', 'a')] };
    const next: PodStatus = {
      phase: 'Failed',
      initContainerStatuses: [ended('setup', 'i', 0, 'Completed')],
      containerStatuses: [ended('main', 'a', 139, 'Error')],
    };
    expect(newContainerTerminations(previous, next)).toEqual([
      { containerType: 'container', exitCode: 139, reason: 'Error' },
      { containerType: 'init_container', exitCode: 0, reason: 'Completed' },
    ]);
  });

  it('counts nothing the previous status already showed: later syncs, and the apiserver status after a restart', () => {
    const status: PodStatus = { phase: 'Failed', containerStatuses: [ended('main', 'a', 137, 'OOMKilled')] };
    expect(newContainerTerminations(status, structuredClone(status))).toEqual([]);
  });

  it('counts a termination seen only as the last state: the container ended and was restarted in between', () => {
    const previous: PodStatus = { phase: 'Running', containerStatuses: [running('main', 'a')] };
    const restarted = running('main', 'b');
    restarted.lastState = { terminated: { exitCode: 1, reason: 'Error', containerID: 'containerd://a' } };
    restarted.restartCount = 1;
    const next: PodStatus = { phase: 'Running', containerStatuses: [restarted] };
    expect(newContainerTerminations(previous, next)).toEqual([
      { containerType: 'container', exitCode: 1, reason: 'Error' },
    ]);
    // The next status moves nothing new: the same termination is still the last state.
    expect(newContainerTerminations(next, structuredClone(next))).toEqual([]);
  });

  it("counts each ephemeral container, and the kubelet's own unknown termination (no container ID) once", () => {
    const unknown: ContainerStatus = {
      ...running('debug', 'x'),
      containerID: undefined,
      state: { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown' } },
    };
    const next: PodStatus = { phase: 'Running', ephemeralContainerStatuses: [unknown] };
    expect(newContainerTerminations(undefined, next)).toEqual([
      { containerType: 'ephemeral_container', exitCode: 137, reason: 'ContainerStatusUnknown' },
    ]);
    expect(newContainerTerminations(next, structuredClone(next))).toEqual([]);
  });
});
