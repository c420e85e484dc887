import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { computePodActions } from '../../../src/agent/runtime/compute-pod-actions.js';
import { containerHash } from '../../../src/agent/runtime/container-hash.js';
import type { PodRuntimeStatus, RuntimeContainer } from '../../../src/agent/runtime/pod-runtime-status.js';
import { backoffKey, type BackoffEntry } from '../../../src/agent/sync/backoff.js';

const NOW = 1_000_000_000;
const basePod: Pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: {
    restartPolicy: 'Always',
    containers: [
      { name: 'a', image: 'busybox', command: ['sleep', '1000'] },
      { name: 'b', image: 'busybox', command: ['sleep', '1000'] },
    ],
  },
};
const ctr = (name: string, over: Partial<RuntimeContainer> = {}): RuntimeContainer => ({
  id: `${name}-${over.restartCount ?? 0}`,
  name,
  state: 'running',
  createdAt: NOW - 1000 - (over.restartCount ?? 0),
  startedAt: NOW - 1000,
  finishedAt: 0,
  exitCode: 0,
  reason: '',
  message: '',
  image: 'busybox',
  imageRef: 'sha256:x',
  hash: basePod.spec.containers.some((c) => c.name === name)
    ? containerHash(basePod.spec.containers.find((c) => c.name === name)!)
    : '',
  restartCount: 0,
  logPath: '',
  sandboxId: 's1',
  ...over,
});
const status = (
  containers: RuntimeContainer[],
  sandboxes = [{ id: 's1', ready: true, createdAt: NOW - 5000, attempt: 0, ip: '10.0.0.1' }],
): PodRuntimeStatus => ({ uid: 'u1', name: 'p', namespace: 'default', sandboxes, containers });
/** `probes`: "<kind>/<container>" → result, e.g. { 'liveness/a': 'failure' }. */
const snap = (backoff: Record<string, BackoffEntry> = {}, probes: Record<string, string> = {}) => ({
  nowMs: NOW,
  backoff: new Map(Object.entries(backoff)),
  probes: { liveness: (n: string) => probes[`liveness/${n}`], startup: (n: string) => probes[`startup/${n}`] },
});
const exited = (name: string, exitCode: number, restartCount = 0, finishedAt = NOW - 2000) =>
  ctr(name, { state: 'exited', exitCode, restartCount, finishedAt, id: `${name}-x${restartCount}` });

interface Case {
  name: string;
  pod?: Pod;
  status: PodRuntimeStatus;
  backoff?: Record<string, BackoffEntry>;
  probes?: Record<string, string>;
  want: Partial<ReturnType<typeof computePodActions>>;
}

const cases: Case[] = [
  {
    name: 'new pod: create sandbox, start all containers',
    status: status([], []),
    want: {
      createSandbox: true,
      killPod: false,
      attempt: 0,
      start: [
        { name: 'a', init: false, restartCount: 0 },
        { name: 'b', init: false, restartCount: 0 },
      ],
      kill: [],
      backoff: [],
    },
  },
  {
    name: 'everything running: nothing to do',
    status: status([ctr('a'), ctr('b')]),
    want: { createSandbox: false, killPod: false, start: [], kill: [], backoff: [] },
  },
  {
    name: 'sandbox not ready: kill pod and recreate with attempt+1',
    status: status([ctr('a'), ctr('b')], [{ id: 's1', ready: false, createdAt: 1, attempt: 2, ip: '' }]),
    want: {
      createSandbox: true,
      killPod: true,
      attempt: 3,
      start: [
        { name: 'a', init: false, restartCount: 1 },
        { name: 'b', init: false, restartCount: 1 },
      ],
    },
  },
  {
    name: 'crashed container, first restart: immediate, backoff recorded',
    status: status([ctr('a'), exited('b', 1)]),
    want: {
      start: [
        {
          name: 'b',
          init: false,
          restartCount: 1,
          backoff: { key: backoffKey('u1', 'b', containerHash(basePod.spec.containers[1])), eventMs: NOW - 2000 },
        },
      ],
      backoff: [],
    },
  },
  {
    name: 'crashed container within backoff: held as CrashLoopBackOff',
    status: status([ctr('a'), exited('b', 1, 1)]),
    backoff: {
      [backoffKey('u1', 'b', containerHash(basePod.spec.containers[1]))]: {
        delayMs: 10_000,
        lastUpdateMs: NOW - 20_000,
      },
    },
    want: {
      start: [],
      killPod: false,
      backoff: [
        {
          name: 'b',
          init: false,
          remainingMs: 8000,
          message: 'back-off 10s restarting failed container=b pod=p_default(u1)',
        },
      ],
    },
  },
  {
    name: 'backoff expired: restart',
    status: status([ctr('a'), exited('b', 1, 1, NOW - 15_000)]),
    backoff: {
      [backoffKey('u1', 'b', containerHash(basePod.spec.containers[1]))]: {
        delayMs: 10_000,
        lastUpdateMs: NOW - 30_000,
      },
    },
    want: {
      backoff: [],
      start: [
        {
          name: 'b',
          init: false,
          restartCount: 2,
          backoff: { key: backoffKey('u1', 'b', containerHash(basePod.spec.containers[1])), eventMs: NOW - 15_000 },
        },
      ],
    },
  },
  {
    name: 'OnFailure: succeeded container is not restarted, pod killed when nothing runs',
    pod: { ...basePod, spec: { ...basePod.spec, restartPolicy: 'OnFailure' } },
    status: status([exited('a', 0), exited('b', 0)]),
    want: { start: [], killPod: true },
  },
  {
    name: 'Never: failed container stays down',
    pod: { ...basePod, spec: { ...basePod.spec, restartPolicy: 'Never' } },
    status: status([ctr('a'), exited('b', 2)]),
    want: { start: [], killPod: false },
  },
  {
    name: 'Never: finished pod gets no new sandbox',
    pod: { ...basePod, spec: { ...basePod.spec, restartPolicy: 'Never' } },
    status: status([exited('a', 0), exited('b', 0)], [{ id: 's1', ready: false, createdAt: 1, attempt: 0, ip: '' }]),
    want: { createSandbox: false, killPod: true, start: [] },
  },
  {
    // Upstream: the sandbox is not made again once the pod was initialized and nothing is left to run; before, its init
    // container ran again in a new sandbox.
    name: 'OnFailure with an init container, all succeeded, sandbox gone: no new sandbox, no init container again',
    pod: {
      ...basePod,
      spec: {
        ...basePod.spec,
        restartPolicy: 'OnFailure',
        initContainers: [{ name: 'init', image: 'busybox', command: ['true'] }],
      },
    },
    status: status(
      [exited('a', 0), exited('b', 0), exited('init', 0)],
      [{ id: 's1', ready: false, createdAt: 1, attempt: 0, ip: '' }],
    ),
    want: { createSandbox: false, start: [] },
  },
  {
    name: 'spec hash changed: kill and restart',
    status: status([ctr('a', { hash: 'deadbeef' }), ctr('b')]),
    want: {
      kill: [
        {
          id: 'a-0',
          name: 'a',
          reason: 'Container spec hash changed',
          message: 'Container a definition changed, will be restarted',
        },
      ],
      start: [{ name: 'a', init: false, restartCount: 1 }],
    },
  },
  {
    name: 'deleted pod: nothing restarts',
    pod: { ...basePod, metadata: { ...basePod.metadata, deletionTimestamp: '2025-01-01T00:00:00Z' } },
    status: status([exited('a', 1), exited('b', 1)]),
    want: { start: [], killPod: true },
  },
];

const initPod: Pod = {
  ...basePod,
  spec: {
    ...basePod.spec,
    initContainers: [
      { name: 'i1', image: 'busybox', command: ['true'] },
      { name: 'i2', image: 'busybox', command: ['true'] },
    ],
  },
};
const ictr = (name: string, over: Partial<RuntimeContainer>) =>
  ctr(name, { hash: containerHash(initPod.spec.initContainers!.find((c) => c.name === name)!), ...over });
const initCases: Case[] = [
  {
    name: 'init: new pod starts only the first init container',
    pod: initPod,
    status: status([], []),
    want: { createSandbox: true, start: [{ name: 'i1', init: true, restartCount: 0 }] },
  },
  {
    name: 'init: running init container is waited for',
    pod: initPod,
    status: status([ictr('i1', {})]),
    want: { start: [], killPod: false },
  },
  {
    name: 'init: first done, second starts',
    pod: initPod,
    status: status([ictr('i1', { state: 'exited', exitCode: 0 })]),
    want: { start: [{ name: 'i2', init: true, restartCount: 0 }] },
  },
  {
    name: 'init: all done, regular containers start',
    pod: initPod,
    status: status([
      ictr('i2', { state: 'exited', exitCode: 0, id: 'i2' }),
      ictr('i1', { state: 'exited', exitCode: 0, id: 'i1' }),
    ]),
    want: {
      start: [
        { name: 'a', init: false, restartCount: 0 },
        { name: 'b', init: false, restartCount: 0 },
      ],
    },
  },
  {
    name: 'init: failed init container restarts (Always)',
    pod: initPod,
    status: status([ictr('i1', { state: 'exited', exitCode: 1, finishedAt: NOW - 1 })]),
    want: {
      start: [
        {
          name: 'i1',
          init: true,
          restartCount: 1,
          backoff: { key: backoffKey('u1', 'i1', containerHash(initPod.spec.initContainers![0])), eventMs: NOW - 1 },
        },
      ],
    },
  },
  {
    name: 'init: failed init container fails the pod (Never)',
    pod: { ...initPod, spec: { ...initPod.spec, restartPolicy: 'Never' } },
    status: status([ictr('i1', { state: 'exited', exitCode: 1 })]),
    want: { start: [], failed: true, killPod: true },
  },
];

const probeCases: Case[] = [
  {
    name: 'liveness failure: kill and restart with upstream message',
    status: status([ctr('a'), ctr('b')]),
    probes: { 'liveness/a': 'failure' },
    want: {
      kill: [
        {
          id: 'a-0',
          name: 'a',
          reason: 'Container a failed liveness probe',
          message: 'Container a failed liveness probe, will be restarted',
        },
      ],
      start: [{ name: 'a', init: false, restartCount: 1 }],
    },
  },
  {
    name: 'startup failure: kill and restart',
    status: status([ctr('a'), ctr('b')]),
    probes: { 'startup/b': 'failure' },
    want: {
      kill: [
        {
          id: 'b-0',
          name: 'b',
          reason: 'Container b failed startup probe',
          message: 'Container b failed startup probe, will be restarted',
        },
      ],
      start: [{ name: 'b', init: false, restartCount: 1 }],
    },
  },
  {
    name: 'liveness failure with restartPolicy Never: killed, not restarted',
    pod: { ...basePod, spec: { ...basePod.spec, restartPolicy: 'Never' } },
    status: status([ctr('a'), ctr('b')]),
    probes: { 'liveness/a': 'failure' },
    want: {
      kill: [
        {
          id: 'a-0',
          name: 'a',
          reason: 'Container a failed liveness probe',
          message: 'Container a failed liveness probe, will be restarted',
        },
      ],
      start: [],
    },
  },
  {
    name: "a probe-level terminationGracePeriodSeconds overrides the pod's for the kill",
    pod: {
      ...basePod,
      spec: {
        ...basePod.spec,
        containers: [
          {
            ...basePod.spec.containers[0],
            livenessProbe: { exec: { command: ['x'] }, terminationGracePeriodSeconds: 3 },
          },
          basePod.spec.containers[1],
        ],
      },
    },
    status: status([
      ctr('a', {
        hash: containerHash({
          ...basePod.spec.containers[0],
          livenessProbe: { exec: { command: ['x'] }, terminationGracePeriodSeconds: 3 },
        }),
      }),
      ctr('b'),
    ]),
    probes: { 'liveness/a': 'failure' },
    want: {
      kill: [
        {
          id: 'a-0',
          name: 'a',
          reason: 'Container a failed liveness probe',
          message: 'Container a failed liveness probe, will be restarted',
          gracePeriodSeconds: 3,
        },
      ],
    },
  },
  {
    name: 'liveness success or unknown: nothing',
    status: status([ctr('a'), ctr('b')]),
    probes: { 'liveness/a': 'success', 'startup/b': 'unknown' },
    want: { kill: [], start: [] },
  },
];

const sidecarPod: Pod = {
  ...basePod,
  spec: {
    ...basePod.spec,
    restartPolicy: 'Never',
    initContainers: [
      { name: 's1', image: 'busybox', restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } },
      { name: 'i1', image: 'busybox' },
      { name: 's2', image: 'busybox', restartPolicy: 'Always' },
    ],
  },
};
/** The sidecars' probes set their own terminationGracePeriodSeconds. */
const probeGracePod: Pod = {
  ...sidecarPod,
  spec: {
    ...sidecarPod.spec,
    initContainers: [
      {
        name: 's1',
        image: 'busybox',
        restartPolicy: 'Always',
        startupProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 5 },
      },
      { name: 'i1', image: 'busybox' },
      {
        name: 's2',
        image: 'busybox',
        restartPolicy: 'Always',
        livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 7 },
      },
    ],
  },
};
const sctr = (name: string, over: Partial<RuntimeContainer>) =>
  ctr(name, { hash: containerHash(sidecarPod.spec.initContainers!.find((c) => c.name === name)!), ...over });
const sidecarCases: Case[] = [
  {
    name: 'sidecar: running but not started (startup probe) holds the next init container',
    pod: sidecarPod,
    status: status([sctr('s1', {})]),
    probes: { 'startup/s1': 'unknown' },
    want: { start: [] },
  },
  {
    name: 'sidecar: started → the next init container runs',
    pod: sidecarPod,
    status: status([sctr('s1', {})]),
    probes: { 'startup/s1': 'success' },
    want: { start: [{ name: 'i1', init: true, restartCount: 0 }] },
  },
  {
    name: 'sidecar without startup probe: running is started; regular containers follow',
    pod: sidecarPod,
    status: status([
      sctr('s2', { id: 's2' }),
      sctr('i1', { state: 'exited', exitCode: 0, id: 'i1' }),
      sctr('s1', { id: 's1' }),
    ]),
    probes: { 'startup/s1': 'success' },
    want: {
      start: [
        { name: 'a', init: false, restartCount: 0 },
        { name: 'b', init: false, restartCount: 0 },
      ],
    },
  },
  {
    name: 'sidecar exited after the regular containers started: restarted although restartPolicy is Never',
    pod: sidecarPod,
    status: status([
      ctr('a'),
      ctr('b'),
      sctr('s2', { state: 'exited', exitCode: 1, id: 's2x', finishedAt: NOW - 1 }),
      sctr('s1', { id: 's1' }),
    ]),
    probes: { 'startup/s1': 'success' },
    want: {
      killPod: false,
      start: [
        {
          name: 's2',
          init: true,
          restartCount: 1,
          backoff: { key: backoffKey('u1', 's2', containerHash(sidecarPod.spec.initContainers![2])), eventMs: NOW - 1 },
        },
      ],
    },
  },
  {
    name: 'sidecar failed its startup probe before the regular containers: restarted, with the probe’s grace period (upstream "restartable init container should be restarted startup probe fails")',
    pod: probeGracePod,
    status: status([sctr('s1', { id: 's1-0' })]),
    probes: { 'startup/s1': 'failure' },
    want: {
      kill: [
        {
          id: 's1-0',
          name: 's1',
          reason: 'Container s1 failed startup probe',
          message: 'Init container s1 failed startup probe',
          gracePeriodSeconds: 5,
        },
      ],
      start: [{ name: 's1', init: true, restartCount: 1 }],
    },
  },
  {
    name: 'sidecar failed its liveness probe after the regular containers started: the probe’s terminationGracePeriodSeconds overrides the pod’s (regression)',
    pod: probeGracePod,
    status: status([
      ctr('a'),
      ctr('b'),
      sctr('s2', { id: 's2' }),
      sctr('i1', { state: 'exited', exitCode: 0, id: 'i1' }),
      sctr('s1', { id: 's1' }),
    ]),
    probes: { 'startup/s1': 'success', 'liveness/s2': 'failure' },
    want: {
      kill: [
        {
          id: 's2',
          name: 's2',
          reason: 'Container s2 failed liveness probe',
          message: 'Init container s2 failed liveness probe',
          gracePeriodSeconds: 7,
        },
      ],
      start: [{ name: 's2', init: true, restartCount: 1 }],
    },
  },
  {
    name: 'regular containers all done: the pod is killed even though sidecars run',
    pod: sidecarPod,
    status: status([exited('a', 0), exited('b', 0), sctr('s2', { id: 's2' }), sctr('s1', { id: 's1' })]),
    probes: { 'startup/s1': 'success' },
    want: { killPod: true, start: [] },
  },
];

describe('computePodActions', () => {
  for (const c of [...cases, ...initCases, ...probeCases, ...sidecarCases]) {
    it(c.name, () => {
      const got = computePodActions(c.pod ?? basePod, c.status, snap(c.backoff, c.probes));
      expect(got).toMatchObject(c.want);
    });
  }
});
