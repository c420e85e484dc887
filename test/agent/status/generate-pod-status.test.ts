/**
 * The status after a kubelet restart, when the status manager has nothing yet and the previous
 * status is the apiserver's (upstream generateAPIPodStatus with the pod's status as the old one):
 * a terminal phase never goes back, the start time and transition times stay, and a container
 * the runtime lost keeps what the apiserver knew of it (convertToAPIContainerStatuses).
 */
import { describe, expect, it } from 'vitest';
import type { ContainerStatus, Pod, PodStatus } from '../../../src/api/types.js';
import {
  carriedLastState,
  generatePodStatus,
  type PodStatusContext,
} from '../../../src/agent/status/generate-pod-status.js';
import { podIPsOf, sortPodIPs } from '../../../src/agent/runtime/pod-ips.js';
import { networkIps } from '../../../src/agent/runtime/runtime-manager.js';
import {
  emptyRuntimeStatus,
  type PodRuntimeStatus,
  type RuntimeContainer,
} from '../../../src/agent/runtime/pod-runtime-status.js';

const NOW = Date.parse('2026-11-25T12:00:00Z');
const pod = (o: { restartPolicy?: string; status?: PodStatus; deleted?: boolean; source?: string } = {}): Pod =>
  ({
    metadata: {
      name: 'p',
      namespace: 'd',
      uid: 'u',
      annotations: o.source ? { 'kubernetes.io/config.source': o.source } : {},
      ...(o.deleted ? { deletionTimestamp: '2026-11-25T11:59:00Z' } : {}),
    },
    spec: { restartPolicy: o.restartPolicy ?? 'Always', containers: [{ name: 'main', image: 'busybox' }] },
    status: o.status,
  }) as unknown as Pod;
const ctx = (previous?: PodStatus): PodStatusContext => ({
  nowMs: NOW,
  nodeIP: '10.0.0.1',
  runtimeName: 'containerd',
  reasons: new Map(),
  previous,
});
const container = (state: RuntimeContainer['state'], exitCode = 0): RuntimeContainer => ({
  id: 'c1',
  name: 'main',
  state,
  createdAt: NOW - 60_000,
  startedAt: NOW - 59_000,
  finishedAt: state === 'exited' ? NOW - 1000 : 0,
  exitCode,
  reason: '',
  message: '',
  image: 'busybox',
  imageRef: 'sha256:b',
  hash: 'h',
  restartCount: 2,
  logPath: '',
  sandboxId: 's1',
});
const withContainers = (...containers: RuntimeContainer[]): PodRuntimeStatus => ({
  ...emptyRuntimeStatus('u', 'p', 'd'),
  sandboxes: [
    {
      id: 's1',
      ready: containers.some((c) => c.state === 'running'),
      createdAt: NOW - 61_000,
      attempt: 0,
      ip: '10.1.0.5',
    },
  ],
  containers,
});
const cs = (
  state: ContainerStatus['state'],
  restartCount = 3,
  lastState: ContainerStatus['lastState'] = {},
): ContainerStatus =>
  ({
    name: 'main',
    state,
    lastState,
    ready: false,
    restartCount,
    image: 'busybox',
    imageID: 'sha256:b',
    containerID: 'containerd://old',
  }) as ContainerStatus;

describe('a terminal phase in the apiserver', () => {
  it('is kept whatever the runtime shows (a Failed pod whose container still runs stays Failed)', () => {
    const p = pod({ status: { phase: 'Failed', reason: 'Evicted' } });
    expect(generatePodStatus(p, withContainers(container('running')), ctx(p.status)).phase).toBe('Failed');
    const s = pod({ restartPolicy: 'Never', status: { phase: 'Succeeded' } });
    expect(generatePodStatus(s, emptyRuntimeStatus('u', 'p', 'd'), ctx(s.status)).phase).toBe('Succeeded');
  });

  it('but not for a static pod, which may start again with the same UID', () => {
    const p = pod({ source: 'file', status: { phase: 'Succeeded' } });
    expect(generatePodStatus(p, withContainers(container('running')), ctx()).phase).toBe('Running');
  });

  it('a phase that is not terminal is generated from the runtime as before', () => {
    const p = pod({ status: { phase: 'Pending' } });
    expect(generatePodStatus(p, withContainers(container('running')), ctx(p.status)).phase).toBe('Running');
  });
});

describe('the previous status', () => {
  it('keeps the start time and the conditions’ transition times', () => {
    const previous: PodStatus = {
      phase: 'Running',
      startTime: '2026-11-20T08:00:00Z',
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-20T08:00:05Z' },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-20T07:59:59Z' },
      ],
    };
    const st = generatePodStatus(pod({ status: previous }), withContainers(container('running')), ctx(previous));
    expect(st.startTime).toBe('2026-11-20T08:00:00Z');
    expect(st.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime).toBe('2026-11-20T08:00:05Z');
    expect(st.conditions!.find((c) => c.type === 'PodScheduled')!.lastTransitionTime).toBe('2026-11-20T07:59:59Z');
    expect(generatePodStatus(pod(), withContainers(container('running')), ctx()).startTime).toBe(
      '2026-11-25T12:00:00Z',
    );
    // The apiserver's start time wins over the kubelet's own (a mirror pod learnt of after the first sync).
    expect(
      generatePodStatus(pod(), withContainers(container('running')), {
        ...ctx(previous),
        apiStartTime: '2026-11-19T00:00:00Z',
      }).startTime,
    ).toBe('2026-11-19T00:00:00Z');
  });

  it('a container the runtime lost that had terminated keeps its terminated status', () => {
    const old = cs({ terminated: { exitCode: 0, reason: 'Completed', finishedAt: '2026-11-20T08:10:00Z' } });
    const previous: PodStatus = { phase: 'Succeeded', containerStatuses: [old] };
    const st = generatePodStatus(
      pod({ restartPolicy: 'Never', status: previous }),
      emptyRuntimeStatus('u', 'p', 'd'),
      ctx(previous),
    );
    expect(st.containerStatuses![0]).toMatchObject({
      state: old.state,
      restartCount: 3,
      containerID: 'containerd://old',
    });
    expect(st.phase).toBe('Succeeded');
  });

  it('a container the runtime lost while it ran: terminated ContainerStatusUnknown (137) in its last state, one restart more — none when the pod is being deleted', () => {
    const previous: PodStatus = {
      phase: 'Running',
      containerStatuses: [cs({ running: { startedAt: '2026-11-20T08:00:01Z' } })],
    };
    const st = generatePodStatus(pod({ status: previous }), emptyRuntimeStatus('u', 'p', 'd'), ctx(previous))
      .containerStatuses![0];
    expect(st.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(st.lastState).toEqual({
      terminated: {
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was deleted.  The container used to be Running',
        exitCode: 137,
      },
    });
    expect(st.restartCount).toBe(4);
    const deleted = generatePodStatus(
      pod({ status: previous, deleted: true }),
      emptyRuntimeStatus('u', 'p', 'd'),
      ctx(previous),
    ).containerStatuses![0];
    expect(deleted.restartCount).toBe(3);
  });

  it('a container the runtime lost while waiting keeps its restart count and last state; one the runtime has is the runtime’s', () => {
    const last = { terminated: { exitCode: 1, reason: 'Error' } };
    const previous: PodStatus = {
      phase: 'Running',
      containerStatuses: [cs({ waiting: { reason: 'CrashLoopBackOff' } }, 5, last)],
    };
    const st = generatePodStatus(pod({ status: previous }), emptyRuntimeStatus('u', 'p', 'd'), ctx(previous))
      .containerStatuses![0];
    expect(st).toMatchObject({ state: { waiting: { reason: 'ContainerCreating' } }, restartCount: 5, lastState: last });
    const live = generatePodStatus(pod({ status: previous }), withContainers(container('running')), ctx(previous))
      .containerStatuses![0];
    expect(live).toMatchObject({ restartCount: 2, containerID: 'containerd://c1', lastState: {} });
  });
});

describe('carriedLastState: the termination before a container whose previous instance the runtime pruned', () => {
  const terminated = (id: string, exitCode: number) => ({
    exitCode,
    reason: exitCode ? 'Error' : 'Completed',
    containerID: `containerd://${id}`,
  });
  const status = (id: string, state: ContainerStatus['state'], lastState: ContainerStatus['lastState'] = {}) =>
    ({ ...cs(state, 1, lastState), containerID: `containerd://${id}` }) as ContainerStatus;

  it("is the previous status's state when that was another instance's end (upstream v1.36, #136964)", () => {
    const old = status('a', { terminated: terminated('a', 42) });
    expect(carriedLastState(old, 'containerd://b')).toEqual({ terminated: terminated('a', 42) });
  });

  it('is the last state the same instance already carried', () => {
    const old = status('b', { running: { startedAt: '2026-11-30T00:00:00Z' } }, { terminated: terminated('a', 42) });
    expect(carriedLastState(old, 'containerd://b')).toEqual({ terminated: terminated('a', 42) });
  });

  it("is nothing without a previous status, for the instance's own end, or for a waiting container", () => {
    expect(carriedLastState(undefined, 'containerd://b')).toBeUndefined();
    expect(carriedLastState(status('b', { terminated: terminated('b', 0) }), 'containerd://b')).toBeUndefined();
    expect(
      carriedLastState(status('a', { waiting: { reason: 'ContainerCreating' } }), 'containerd://b'),
    ).toBeUndefined();
  });

  it('is what a waiting container carried, when another instance follows it (upstream convertContainerStatus)', () => {
    // The container a restart of all containers stopped waits with its end as its last state; the next instance
    // keeps it.
    const old = status('a', { waiting: { reason: 'ContainerCreating' } }, { terminated: terminated('a', 42) });
    expect(carriedLastState(old, 'containerd://b')).toEqual({ terminated: terminated('a', 42) });
  });
});

describe('phase rules (upstream generateAPIPodStatus)', () => {
  it('a terminal phase the kubelet itself reported never goes back; its reason and message stay with it', () => {
    const previous: PodStatus = {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    };
    const st = generatePodStatus(pod(), withContainers(container('running')), ctx(previous));
    expect(st).toMatchObject({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' });
    // The apiserver's reason when the kubelet has none (after a restart).
    const api = pod({
      status: {
        phase: 'Failed',
        reason: 'DeadlineExceeded',
        message: 'Pod was active on the node longer than the specified deadline',
      },
    });
    expect(generatePodStatus(api, withContainers(container('exited', 137)), ctx({ phase: 'Failed' }))).toMatchObject({
      reason: 'DeadlineExceeded',
    });
    // A new phase drops the old phase's reason.
    expect(
      generatePodStatus(pod(), withContainers(container('running')), ctx({ phase: 'Pending', reason: 'X' })).reason,
    ).toBeUndefined();
  });

  it('Ready and ContainersReady are False for a terminal pod: PodCompleted when Succeeded, PodFailed when Failed (no message); Initialized says PodCompleted', () => {
    const cond = (st: PodStatus, type: string) => st.conditions!.find((c) => c.type === type)!;
    const failed = generatePodStatus(pod({ status: { phase: 'Failed' } }), withContainers(container('running')), ctx());
    for (const t of ['Ready', 'ContainersReady'])
      expect(cond(failed, t)).toMatchObject({ status: 'False', reason: 'PodFailed' });
    expect(cond(failed, 'Ready').message).toBeUndefined();
    const done = generatePodStatus(pod({ restartPolicy: 'Never' }), withContainers(container('exited', 0)), ctx());
    expect(done.phase).toBe('Succeeded');
    for (const t of ['Ready', 'ContainersReady'])
      expect(cond(done, t)).toMatchObject({ status: 'False', reason: 'PodCompleted' });
    expect(cond(done, 'Initialized')).toMatchObject({ status: 'True', reason: 'PodCompleted' });
    const live = generatePodStatus(pod(), withContainers(container('running')), ctx());
    expect(cond(live, 'Ready')).toMatchObject({ status: 'True' });
    expect(cond(live, 'Initialized').reason).toBeUndefined();
  });
});

describe('pod IPs of a dual-stack sandbox (regression: only the primary IP was reported)', () => {
  const running = (ip: string, additionalIps: string[]): PodRuntimeStatus => ({
    ...emptyRuntimeStatus('u', 'p', 'd'),
    sandboxes: [{ id: 's', ready: true, createdAt: NOW - 60_000, attempt: 0, ip, additionalIps }],
    containers: [container('running')],
  });
  const runningStatus = () => running('10.244.0.5', ['fd00:10:244::5']);
  it('reports both families in podIPs, the node’s family first (upstream sortPodIPs)', () => {
    const s = generatePodStatus(pod(), running('10.244.0.5', ['fd00:10:244::5']), ctx());
    expect([s.podIP, s.podIPs]).toEqual(['10.244.0.5', [{ ip: '10.244.0.5' }, { ip: 'fd00:10:244::5' }]]);
    const v6node = generatePodStatus(pod(), running('10.244.0.5', ['fd00:10:244::5']), { ...ctx(), nodeIP: 'fd00::1' });
    expect([v6node.podIP, v6node.podIPs]).toEqual(['fd00:10:244::5', [{ ip: 'fd00:10:244::5' }, { ip: '10.244.0.5' }]]);
  });
  it('podIPsOf: what status.podIPs and the downward API give: a hostNetwork pod has the node’s, a pod without a ready sandbox none', () => {
    const sandbox = { ready: true, ip: '10.244.0.5', additionalIps: ['fd00::5'] };
    expect(podIPsOf(pod(), sandbox, '10.0.0.1')).toEqual(['10.244.0.5', 'fd00::5']);
    expect(podIPsOf({ ...pod(), spec: { ...pod().spec, hostNetwork: true } } as Pod, sandbox, '10.0.0.1')).toEqual([
      '10.0.0.1',
    ]);
    expect(podIPsOf(pod(), { ...sandbox, ready: false }, '10.0.0.1')).toEqual([]);
  });
  it('a finished pod whose sandbox stopped keeps the IPs it had (Pod IPs specs: failed and succeeded pods)', () => {
    const running = generatePodStatus(pod({ restartPolicy: 'Never' }), runningStatus(), ctx());
    const exited: PodRuntimeStatus = {
      ...emptyRuntimeStatus('u', 'p', 'd'),
      sandboxes: [{ id: 's', ready: false, createdAt: NOW - 60_000, attempt: 0, ip: '' }],
      containers: [container('exited', 1)],
    };
    const failed = generatePodStatus(pod({ restartPolicy: 'Never' }), exited, ctx(running));
    expect([failed.phase, failed.podIP, failed.podIPs]).toEqual([
      'Failed',
      '10.244.0.5',
      [{ ip: '10.244.0.5' }, { ip: 'fd00:10:244::5' }],
    ]);
    // Without a previous status there is nothing to keep.
    expect(generatePodStatus(pod({ restartPolicy: 'Never' }), exited, ctx()).podIPs).toBeUndefined();
  });
  it('sortPodIPs keeps one of each family, valid ones only', () => {
    expect(sortPodIPs(['fd00::5', '10.0.0.5', '10.0.0.6', 'nonsense'], '10.0.0.1')).toEqual(['10.0.0.5', 'fd00::5']);
    expect(sortPodIPs(['fd00::5'], '10.0.0.1')).toEqual(['fd00::5']);
    expect(sortPodIPs([], '')).toEqual([]);
  });
});

describe('networkIps', () => {
  it('reads the primary and the additional IPs of a CRI network status', () => {
    expect(networkIps({ ip: '10.0.0.5', additional_ips: [{ ip: 'fd00::5' }] })).toEqual({
      ip: '10.0.0.5',
      additionalIps: ['fd00::5'],
    });
    expect(networkIps(null)).toEqual({ ip: '', additionalIps: [] });
  });
});

describe('observed generation (PodObservedGenerationTracking, GA in v1.35)', () => {
  it('names the generation the status and each condition were computed for; none when the pod has none', () => {
    const withGeneration = { ...pod(), metadata: { ...pod().metadata, generation: 3 } } as Pod;
    const running: PodRuntimeStatus = withContainers(container('running'));
    const s = generatePodStatus(withGeneration, running, ctx());
    expect(s.observedGeneration).toBe(3);
    expect(s.conditions!.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['PodReadyToStartContainers', 3],
      ['Initialized', 3],
      ['Ready', 3],
      ['ContainersReady', 3],
      ['PodScheduled', 3],
    ]);
    const staticPod = generatePodStatus(pod({ source: 'file' }), running, ctx());
    expect(staticPod.observedGeneration).toBeUndefined();
    expect(staticPod.conditions!.some((c) => 'observedGeneration' in c)).toBe(false);
  });
});

describe('the signal a container is stopped with (containerStatuses[].stopSignal)', () => {
  it("is the runtime's with the ContainerStopSignals gate on, and absent with it off or when the runtime says none", () => {
    const withSignal = { ...container('running'), stopSignal: 'SIGRTMIN+1' };
    const on = { ...ctx(), containerStopSignals: true };
    expect(generatePodStatus(pod(), withContainers(withSignal), on).containerStatuses![0].stopSignal).toBe(
      'SIGRTMIN+1',
    );
    expect(generatePodStatus(pod(), withContainers(withSignal), ctx()).containerStatuses![0]).not.toHaveProperty(
      'stopSignal',
    );
    expect(generatePodStatus(pod(), withContainers(container('running')), on).containerStatuses![0]).not.toHaveProperty(
      'stopSignal',
    );
  });
});

describe('the identity a container runs as (containerStatuses[].user)', () => {
  it('is what the runtime reports, and absent when it reports none', () => {
    const withUser = { ...container('running'), user: { uid: 1000, gid: 3000, supplementalGroups: [3000, 4000] } };
    const s = generatePodStatus(pod(), withContainers(withUser), ctx());
    expect(s.containerStatuses![0].user).toEqual({ linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 4000] } });
    expect(
      generatePodStatus(pod(), withContainers(container('running')), ctx()).containerStatuses![0].user,
    ).toBeUndefined();
  });
});

describe('an init container the runtime no longer has (upstream v1.36, kubernetes/kubernetes#131317)', () => {
  // A static pod after a kubelet restart: no previous status, the init container removed, the main container on.
  const withInit = (init: Record<string, unknown>): Pod => {
    const p = pod({ source: 'file' });
    p.spec.initContainers = [{ name: 'init-1', image: 'busybox', ...init }] as Pod['spec']['containers'];
    return p;
  };

  it('is Completed (exit 0, ready) once a regular container was created, and the pod Running, not Init:0/1', () => {
    for (const state of ['running', 'exited', 'created'] as const) {
      const st = generatePodStatus(withInit({}), withContainers(container(state)), ctx());
      expect(st.initContainerStatuses![0]).toMatchObject({
        state: {
          terminated: {
            reason: 'Completed',
            message:
              'Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally',
            exitCode: 0,
          },
        },
        ready: true,
      });
    }
    const running = generatePodStatus(withInit({}), withContainers(container('running')), ctx());
    expect(running.phase).toBe('Running');
    expect(running.conditions!.find((c) => c.type === 'Initialized')?.status).toBe('True');
  });

  it('stays waiting before any regular container exists, and for a sidecar, which is started again', () => {
    const before = generatePodStatus(withInit({}), emptyRuntimeStatus('u', 'p', 'd'), ctx());
    expect(before.initContainerStatuses![0].state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(before.phase).toBe('Pending');
    const sidecar = generatePodStatus(
      withInit({ restartPolicy: 'Always' }),
      withContainers(container('running')),
      ctx(),
    );
    expect(sidecar.initContainerStatuses![0].state.waiting).toBeDefined();
  });
});

describe('the phase of a pod with sidecars (upstream getPhase)', () => {
  const withSidecar = (restartPolicy: string, startupProbe = false): Pod => {
    const p = pod({ restartPolicy });
    p.spec.initContainers = [
      {
        name: 'side',
        image: 'busybox',
        restartPolicy: 'Always',
        ...(startupProbe ? { startupProbe: { exec: { command: ['true'] } } } : {}),
      },
    ] as Pod['spec']['containers'];
    return p;
  };
  const sidecar = (state: RuntimeContainer['state'], over: Partial<RuntimeContainer> = {}): RuntimeContainer => ({
    ...container(state),
    id: 'side1',
    name: 'side',
    ...over,
  });

  it("is Running while a Job's sidecar still runs after its container succeeded, Succeeded once it stopped", () => {
    const running = generatePodStatus(
      withSidecar('Never'),
      withContainers(container('exited', 0), sidecar('running')),
      ctx(),
    );
    expect(running.phase).toBe('Running');
    const stopped = generatePodStatus(
      withSidecar('Never'),
      withContainers(container('exited', 0), sidecar('exited', { exitCode: 137 })),
      ctx(),
    );
    expect(stopped.phase).toBe('Succeeded');
  });

  it('is Pending while a new sandbox (a node rebooted) starts its sidecar, whatever the old sandbox ran', () => {
    // The old sandbox's container exited; the new sandbox runs the sidecar, whose startup probe has not passed yet.
    const rs: PodRuntimeStatus = {
      ...withContainers(sidecar('running', { sandboxId: 's2' }), container('exited', 255)),
      sandboxes: [
        { id: 's2', ready: true, createdAt: NOW - 1000, attempt: 1, ip: '10.1.0.6' },
        { id: 's1', ready: false, createdAt: NOW - 61_000, attempt: 0, ip: '10.1.0.5' },
      ],
    };
    expect(generatePodStatus(withSidecar('Always', true), rs, ctx()).phase).toBe('Pending');
  });
});
