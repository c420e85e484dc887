/**
 * Container restart rules (ContainerRestartRules, beta and on in v1.36): the decision by a
 * container's own restartPolicy and restartPolicyRules, what the pod's actions do with it, and the
 * pod phase it gives.
 */
import { describe, expect, it } from 'vitest';
import type { Container, ContainerStatus, Pod } from '../../../src/api/types.js';
import {
  containerShouldRestart,
  podRestartsOnFailure,
  restartsAfterProbeKill,
} from '../../../src/agent/runtime/restart-rules.js';
import { computePodActions } from '../../../src/agent/runtime/compute-pod-actions.js';
import { generatePodStatus, podPhase } from '../../../src/agent/status/generate-pod-status.js';
import type { PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';
import { containerHash } from '../../../src/agent/runtime/container-hash.js';
import { BackoffTable, backoffKey } from '../../../src/agent/sync/backoff.js';

const container = (over: Partial<Container> = {}): Container => ({ name: 'main', image: 'busybox', ...over });
const rules = (operator: 'In' | 'NotIn', values: number[], action = 'Restart') => [
  { action, exitCodes: { operator, values } },
];

describe('containerShouldRestart (upstream podutil.ContainerShouldRestart)', () => {
  const cases: [string, Container, string, number, boolean][] = [
    ['pod Always', container(), 'Always', 0, true],
    ['pod OnFailure, exit 0', container(), 'OnFailure', 0, false],
    ['pod OnFailure, exit 1', container(), 'OnFailure', 1, true],
    ['pod Never', container(), 'Never', 1, false],
    ['container Never overrides pod Always', container({ restartPolicy: 'Never' }), 'Always', 1, false],
    ['container Always overrides pod Never', container({ restartPolicy: 'Always' }), 'Never', 0, true],
    ['container OnFailure, exit 0', container({ restartPolicy: 'OnFailure' }), 'Never', 0, false],
    [
      'rule In matches: Restart',
      container({ restartPolicy: 'Never', restartPolicyRules: rules('In', [42]) }),
      'Never',
      42,
      true,
    ],
    [
      'rule In does not match: the policy',
      container({ restartPolicy: 'Never', restartPolicyRules: rules('In', [42]) }),
      'Always',
      1,
      false,
    ],
    [
      'rule NotIn matches',
      container({ restartPolicy: 'Never', restartPolicyRules: rules('NotIn', [0]) }),
      'Never',
      3,
      true,
    ],
    [
      'rule NotIn does not match',
      container({ restartPolicy: 'Never', restartPolicyRules: rules('NotIn', [0]) }),
      'Never',
      0,
      false,
    ],
    [
      'a matching rule with another action does not restart',
      container({ restartPolicy: 'Always', restartPolicyRules: rules('In', [7], 'DoNotRestart') }),
      'Always',
      7,
      false,
    ],
    [
      'rules without a container restartPolicy are not asked',
      container({ restartPolicyRules: rules('In', [42]) }),
      'Never',
      42,
      false,
    ],
  ];
  for (const [name, c, podPolicy, exitCode, want] of cases)
    it(name, () => expect(containerShouldRestart(c, { restartPolicy: podPolicy as 'Always' }, exitCode)).toBe(want));

  it('a probe kill follows the container policy, else the pod one; rules are not asked', () => {
    expect(restartsAfterProbeKill(container({ restartPolicy: 'Never' }), { restartPolicy: 'Always' })).toBe(false);
    expect(restartsAfterProbeKill(container({ restartPolicy: 'OnFailure' }), { restartPolicy: 'Never' })).toBe(true);
    expect(restartsAfterProbeKill(container(), { restartPolicy: 'Never' })).toBe(false);
  });

  it('a Never pod may still restart when one of its containers says so', () => {
    expect(podRestartsOnFailure({ restartPolicy: 'Never', containers: [container()] })).toBe(false);
    expect(
      podRestartsOnFailure({ restartPolicy: 'Never', containers: [container({ restartPolicy: 'OnFailure' })] }),
    ).toBe(true);
    expect(
      podRestartsOnFailure({
        restartPolicy: 'Never',
        containers: [container({ restartPolicy: 'Never', restartPolicyRules: rules('In', [42]) })],
      }),
    ).toBe(true);
  });
});

const NOW = 1_000_000_000;
const pod = (restartPolicy: 'Always' | 'Never', main: Partial<Container>): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: { restartPolicy, containers: [container(main), container({ name: 'side' })] },
});
const runtime = (mainExit: number): PodRuntimeStatus => ({
  uid: 'u1',
  name: 'p',
  namespace: 'default',
  sandboxes: [{ id: 's1', ready: true, createdAt: NOW - 5000, attempt: 0, ip: '10.0.0.1' }],
  containers: [
    {
      id: 'main-x0',
      name: 'main',
      state: 'exited',
      createdAt: NOW - 3000,
      startedAt: NOW - 3000,
      finishedAt: NOW - 2000,
      exitCode: mainExit,
      reason: '',
      message: '',
      image: 'busybox',
      imageRef: 'sha256:x',
      hash: '',
      restartCount: 0,
      logPath: '',
      sandboxId: 's1',
    },
  ],
});
const snap = { nowMs: NOW, backoff: new Map() };
const statusContext = { nowMs: NOW, nodeIP: '10.0.0.1', runtimeName: 'containerd', reasons: new Map() };

describe('the pod actions and phase with restart rules', () => {
  it('restarts a container whose rule matches its exit code in a Never pod, and not one whose rule does not', () => {
    const restartOn42 = pod('Never', { restartPolicy: 'Never', restartPolicyRules: rules('In', [42]) });
    expect(computePodActions(restartOn42, runtime(42), snap).start.map((s) => s.name)).toContain('main');
    expect(computePodActions(restartOn42, runtime(1), snap).start.map((s) => s.name)).not.toContain('main');
  });

  it('keeps an exited container of an Always pod down when its own policy is Never', () => {
    const never = pod('Always', { restartPolicy: 'Never' });
    expect(computePodActions(never, runtime(1), snap).start.map((s) => s.name)).not.toContain('main');
  });

  it('phase: Running while a stopped container will be started again, else Succeeded or Failed', () => {
    const stopped = (exitCode: number): ContainerStatus => ({
      name: 'main',
      ready: false,
      restartCount: 0,
      image: 'busybox',
      imageID: '',
      state: { terminated: { exitCode } },
      lastState: {},
    });
    const restartOn42 = pod('Never', { restartPolicy: 'Never', restartPolicyRules: rules('In', [42]) });
    restartOn42.spec.containers = [restartOn42.spec.containers[0]];
    expect(podPhase(restartOn42, [], [stopped(42)])).toBe('Running');
    expect(podPhase(restartOn42, [], [stopped(1)])).toBe('Failed');
    expect(podPhase(restartOn42, [], [stopped(0)])).toBe('Succeeded');
    const neverInAlways = pod('Always', { restartPolicy: 'Never' });
    neverInAlways.spec.containers = [neverInAlways.spec.containers[0]];
    expect(podPhase(neverInAlways, [], [stopped(1)])).toBe('Failed');
    expect(podPhase(pod('Always', {}), [], [stopped(1)])).toBe('Running');
  });
});

describe('RestartAllContainers (RestartAllContainersOnContainerExits)', () => {
  const restartAll: Pod = {
    metadata: { name: 'p', namespace: 'default', uid: 'u1' },
    spec: {
      restartPolicy: 'Never',
      initContainers: [container({ name: 'setup' })],
      containers: [
        container({
          name: 'main',
          restartPolicy: 'Never',
          restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }],
        }),
        container({ name: 'helper' }),
      ],
    },
  };
  const inst = (name: string, state: 'running' | 'exited', createdAt: number, o: Record<string, number> = {}) => ({
    id: `${name}-${createdAt}`,
    name,
    state,
    createdAt,
    startedAt: createdAt,
    finishedAt: state === 'exited' ? (o.finishedAt ?? createdAt + 500) : 0,
    exitCode: o.exitCode ?? 0,
    reason: '',
    message: '',
    image: 'busybox',
    imageRef: 'x',
    hash: '',
    restartCount: o.restartCount ?? 0,
    logPath: '',
    sandboxId: 's1',
  });
  const at = (...containers: ReturnType<typeof inst>[]): PodRuntimeStatus => ({
    uid: 'u1',
    name: 'p',
    namespace: 'default',
    sandboxes: [{ id: 's1', ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.1' }],
    containers,
  });
  const before = [inst('setup', 'exited', 100), inst('main', 'exited', 1000, { exitCode: 42, finishedAt: 2000 })];
  const setupKey = backoffKey('u1', 'setup', containerHash(restartAll.spec.initContainers![0]));

  it('stops what still runs of the old run first, without preStop hooks, and reports AllContainersRestarting', () => {
    const status = at(...before, inst('helper', 'running', 1000));
    const actions = computePodActions(restartAll, status, snap);
    expect(actions.kill.map((k) => [k.name, k.skipPreStop])).toEqual([['helper', true]]);
    expect(actions.start).toEqual([]);
    const reported = generatePodStatus(restartAll, status, statusContext);
    expect(reported.conditions!.find((c) => c.type === 'AllContainersRestarting')).toMatchObject({
      status: 'True',
      reason: 'RestartAllContainersStarted',
      message: 'container exited with restart policy rule',
    });
    expect(reported.phase).toBe('Running');
  });

  it('then runs the init containers again, the restart counts going on, and the regular containers after them', () => {
    const stopped = at(...before, inst('helper', 'exited', 1000, { exitCode: 137, finishedAt: 2500 }));
    const again = computePodActions(restartAll, stopped, snap);
    expect(again.start).toEqual([
      { name: 'setup', init: true, restartCount: 1, backoff: { key: setupKey, eventMs: 600 } },
    ]);
    expect(
      generatePodStatus(restartAll, stopped, statusContext).conditions!.find(
        (c) => c.type === 'AllContainersRestarting',
      )?.status,
    ).toBe('False');
    const initDone = at(
      ...before,
      inst('helper', 'exited', 1000, { finishedAt: 2500 }),
      inst('setup', 'exited', 3000, { restartCount: 1 }),
    );
    expect(computePodActions(restartAll, initDone, snap).start.map((s) => [s.name, s.restartCount])).toEqual([
      ['main', 1],
      ['helper', 1],
    ]);
  });

  it('backs off as upstream when the pod keeps restarting all its containers (regression: no backoff at all)', () => {
    // The first restart of the init container was recorded at its start (10 s from then on).
    const backoff = new BackoffTable();
    backoff.next(setupKey, 600, 2600);
    const stopped = at(...before, inst('helper', 'exited', 1000, { exitCode: 137, finishedAt: 2500 }));
    const held = computePodActions(restartAll, stopped, { nowMs: 5000, backoff: backoff.snapshot() });
    expect(held.start).toEqual([]);
    expect(held.backoff).toEqual([
      {
        name: 'setup',
        init: true,
        message: 'back-off 10s restarting failed container=setup pod=p_default(u1)',
        remainingMs: 5600,
      },
    ]);
    expect(computePodActions(restartAll, stopped, { nowMs: 10_600, backoff: backoff.snapshot() }).start).toEqual([
      { name: 'setup', init: true, restartCount: 1, backoff: { key: setupKey, eventMs: 600 } },
    ]);
  });

  it("is False with upstream's reason once the pod is finished", () => {
    const failed = at(
      inst('setup', 'exited', 100),
      inst('main', 'exited', 1000, { exitCode: 1 }),
      inst('helper', 'exited', 1000, { exitCode: 0 }),
    );
    const reported = generatePodStatus(restartAll, failed, statusContext);
    expect(reported.phase).toBe('Failed');
    expect(reported.conditions!.find((c) => c.type === 'AllContainersRestarting')).toMatchObject({
      status: 'False',
      reason: 'PodFailed',
    });
    const completed = at(inst('setup', 'exited', 100), inst('main', 'exited', 1000), inst('helper', 'exited', 1000));
    expect(
      generatePodStatus(restartAll, completed, statusContext).conditions!.find(
        (c) => c.type === 'AllContainersRestarting',
      ),
    ).toMatchObject({ status: 'False', reason: 'PodCompleted' });
  });

  it('a pod without such a rule has no AllContainersRestarting condition', () => {
    expect(
      generatePodStatus(pod('Always', {}), runtime(0), statusContext).conditions!.map((c) => c.type),
    ).not.toContain('AllContainersRestarting');
  });
});
