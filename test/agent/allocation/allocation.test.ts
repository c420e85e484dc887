/**
 * Allocation and in-place resize: upstream's checkpoint files (a Go kubelet v1.36's read and
 * written back byte for byte), the resize admission (Infeasible, Deferred, accepted), the actuation
 * (policy and order), and the manager against a recording runtime.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod, PodPhase } from '../../../src/api/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import {
  ACTUATED_FILE,
  ALLOCATED_FILE,
  decodeAllocations,
  encodeAllocations,
  readAllocations,
} from '../../../src/agent/allocation/checkpoint.js';
import {
  actuationOf,
  admitResize,
  admitResizeInOrder,
  comparePendingResizes,
  changedResources,
  memoryDecreaseRefusal,
  podCgroupFirst,
  specResources,
  withResourceOf,
  withResources,
} from '../../../src/agent/allocation/resize.js';
import { AllocationManager, type AllocationManagerDeps } from '../../../src/agent/allocation/allocation-manager.js';
import { requestedResizes, resizeMessage } from '../../../src/agent/allocation/resize-events.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import { registerResizeMetrics } from '../../../src/agent/metrics/resize-metrics.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';
import { sandboxResources } from '../../../src/agent/cgroups/pod-resource-config.js';
import { generatePodStatus } from '../../../src/agent/status/generate-pod-status.js';
import { KubeletError } from '../../../src/lib/errors.js';

const fixture = join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'checkpoints');
const dir = mkdtempSync(join(tmpdir(), 'tsk-alloc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pod = (uid: string, resources: Container['resources'], extra: Partial<Container> = {}): Pod => ({
  metadata: { name: uid, namespace: 'default', uid },
  spec: { containers: [{ name: 'main', image: 'busybox', resources, ...extra }] },
});
const node = { cpuMilli: 2000, memoryBytes: 4 * 1024 ** 3, pods: 110 };

describe('allocation checkpoints', () => {
  it("reads a Go kubelet v1.36's files and writes them back byte for byte (its checksum included)", () => {
    for (const file of [ALLOCATED_FILE, ACTUATED_FILE]) {
      const text = readFileSync(join(fixture, file), 'utf8').trim();
      const pods = decodeAllocations(text);
      expect(pods.size).toBeGreaterThan(0);
      expect(encodeAllocations(pods)).toBe(text);
    }
    const allocated = decodeAllocations(readFileSync(join(fixture, ALLOCATED_FILE), 'utf8'));
    expect(allocated.get('65762a56-103b-4b67-bec7-83643c44f28a')?.get('main')).toEqual({
      limits: { cpu: '100m', memory: '64Mi' },
      requests: { cpu: '100m', memory: '64Mi' },
    });
  });

  it('refuses a file whose checksum does not match; a missing or corrupt file is no allocations', async () => {
    const text = readFileSync(join(fixture, ALLOCATED_FILE), 'utf8').replace('100m', '200m');
    expect(() => decodeAllocations(text)).toThrow('checksum mismatch');
    expect((await readAllocations(join(dir, 'none'), ALLOCATED_FILE)).size).toBe(0);
  });
});

describe('resize decisions', () => {
  const small = { requests: { cpu: '100m' }, limits: { cpu: '200m' } };
  it('compares quantities by value', () => {
    expect(changedResources({ requests: { cpu: '0.1' } }, { requests: { cpu: '100m' } })).toEqual([]);
    expect(changedResources({ limits: { memory: '64Mi' } }, { limits: { memory: '128Mi' } })).toEqual(['memory']);
  });

  it('Infeasible beyond the node, Deferred next to the others, else accepted; nothing when unchanged', () => {
    const allocated = specResources(pod('a', small));
    expect(admitResize({ desired: pod('a', small), allocated, allocatable: node, others: [] })).toEqual({
      kind: 'none',
    });
    expect(
      admitResize({ desired: pod('a', { requests: { cpu: '3' } }), allocated, allocatable: node, others: [] }),
    ).toEqual({
      kind: 'infeasible',
      message: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000",
      detail: 'insufficient_node_allocatable',
    });
    const busy = [pod('b', { requests: { cpu: '1500m' } })];
    expect(
      admitResize({ desired: pod('a', { requests: { cpu: '1' } }), allocated, allocatable: node, others: busy }),
    ).toEqual({
      kind: 'deferred',
      message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000",
    });
    expect(
      admitResize({ desired: pod('a', { requests: { cpu: '400m' } }), allocated, allocatable: node, others: busy }),
    ).toEqual({ kind: 'accepted' });
  });

  it("refuses to resize a Guaranteed pod's CPU or memory that a static policy pinned, as upstream's admit handler", () => {
    const resources = (cpu: string, memory: string) => ({ requests: { cpu, memory }, limits: { cpu, memory } });
    const allocated = specResources(pod('g', resources('1', '64Mi')));
    const both = { cpuStatic: true, memoryStatic: true };
    const resize = (cpu: string, memory: string, exclusive = both) =>
      admitResize({ desired: pod('g', resources(cpu, memory)), allocated, allocatable: node, others: [], exclusive });
    expect(resize('2', '64Mi')).toEqual({
      kind: 'infeasible',
      message: 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"',
      detail: 'guaranteed_pod_cpu_manager_static_policy',
    });
    expect(resize('1', '128Mi')).toEqual({
      kind: 'infeasible',
      message: 'Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"',
      detail: 'guaranteed_pod_memory_manager_static_policy',
    });
    // Only the resource a static policy pins is held: memory resizes under the CPU policy alone, and the reverse.
    expect(resize('1', '128Mi', { cpuStatic: true, memoryStatic: false })).toEqual({ kind: 'accepted' });
    expect(resize('2', '64Mi', { cpuStatic: false, memoryStatic: true })).toEqual({ kind: 'accepted' });
    // A Burstable pod is not pinned.
    const burstable = specResources(pod('b', { requests: { cpu: '1', memory: '64Mi' } }));
    expect(
      admitResize({
        desired: pod('b', { requests: { cpu: '2', memory: '128Mi' } }),
        allocated: burstable,
        allocatable: node,
        others: [],
        exclusive: both,
      }),
    ).toEqual({ kind: 'accepted' });
  });

  it('restarts for a resource whose resizePolicy says RestartContainer, updates in place otherwise', () => {
    const c: Container = {
      name: 'main',
      image: 'busybox',
      resizePolicy: [
        { resourceName: 'memory', restartPolicy: 'RestartContainer' },
        { resourceName: 'cpu', restartPolicy: 'NotRequired' },
      ],
    } as Container;
    expect(actuationOf(c, ['cpu'])).toBe('update');
    expect(actuationOf(c, ['memory'])).toBe('restart');
  });

  it('the allocated resources replace requests and limits only: the claims a container uses stay (regression: DRA claims were dropped)', () => {
    const p = pod('a', { requests: { cpu: '1' }, claims: [{ name: 'gpu' }] } as Container['resources']);
    const effective = withResources(p, new Map([['main', { limits: { cpu: '2' } }]]));
    expect(effective.spec.containers[0].resources).toEqual({ claims: [{ name: 'gpu' }], limits: { cpu: '2' } });
  });

  it('grows the pod cgroup before the containers and shrinks it after them, one resource at a time', () => {
    const before = pod('a', { limits: { cpu: '200m', memory: '64Mi' } });
    expect(podCgroupFirst(before, pod('a', { limits: { cpu: '400m', memory: '64Mi' } }), 'cpu')).toBe(true);
    expect(podCgroupFirst(before, pod('a', { limits: { cpu: '100m', memory: '64Mi' } }), 'cpu')).toBe(false);
    // CPU down and memory up: memory first (the pod's before its containers'), then CPU (the pod's after theirs).
    const after = pod('a', { limits: { cpu: '100m', memory: '1Gi' } });
    const memoryStep = withResourceOf(before, after, 'memory');
    expect(memoryStep.spec.containers[0].resources).toEqual({ limits: { cpu: '200m', memory: '1Gi' } });
    expect(podCgroupFirst(before, memoryStep, 'memory')).toBe(true);
    expect(podCgroupFirst(memoryStep, withResourceOf(memoryStep, after, 'cpu'), 'cpu')).toBe(false);
    expect(withResourceOf(memoryStep, after, 'cpu').spec.containers[0].resources).toEqual(
      after.spec.containers[0].resources,
    );
  });

  it('writes memory then CPU, each to the pod cgroup on the side that keeps limits above what runs', async () => {
    const calls: string[] = [];
    const m = new AllocationManager({
      rootDir: join(dir, 'steps'),
      runtime: {
        updateContainerResources: async (id: string, linux: { cpu_quota?: number; memory_limit_in_bytes?: number }) =>
          void calls.push(`update ${id} quota=${linux.cpu_quota} memory=${linux.memory_limit_in_bytes}`),
        listContainerStats: async () => [],
      } as unknown as RuntimeService,
      resources: { memoryCapacityBytes: 4 * 1024 ** 3, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      allocatable: () => node,
      activePods: () => [],
      podCgroups: {
        resize: async (p: Pod) =>
          void calls.push(
            `pod cgroup cpu=${p.spec.containers[0].resources?.limits?.cpu} memory=${p.spec.containers[0].resources?.limits?.memory}`,
          ),
      },
      logger: createLogger({ level: 'fatal' }),
    });
    await m.load();
    const status: PodRuntimeStatus = {
      uid: 's',
      name: 's',
      namespace: 'default',
      sandboxes: [{ id: 'sb', ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.1' }],
      containers: [
        {
          ...{ id: 'c1', name: 'main', state: 'running', createdAt: 1, startedAt: 1, finishedAt: 0, exitCode: 0 },
          ...{ reason: '', message: '', image: 'busybox', imageRef: 'x', hash: '', restartCount: 0, logPath: '' },
          sandboxId: 'sb',
        },
      ],
    };
    await m.sync(pod('s', { limits: { cpu: '400m', memory: '64Mi' } }), status);
    await m.sync(pod('s', { limits: { cpu: '200m', memory: '128Mi' } }), status);
    expect(calls).toEqual([
      'pod cgroup cpu=400m memory=128Mi',
      `update c1 quota=40000 memory=${128 * 2 ** 20}`,
      `update c1 quota=20000 memory=${128 * 2 ** 20}`,
      'pod cgroup cpu=200m memory=128Mi',
    ]);
  });
});

describe('the order of pending resizes (upstream sortPendingResizes)', () => {
  const resizing = (
    uid: string,
    from: string,
    to: string,
    o: { priority?: number; since?: number; limit?: boolean } = {},
  ) => {
    // With limits equal to requests (memory too): Guaranteed.
    const shaped = (cpu: string): Container['resources'] =>
      o.limit ? { requests: { cpu, memory: '64Mi' }, limits: { cpu, memory: '64Mi' } } : { requests: { cpu } };
    const p = pod(uid, shaped(to));
    p.spec.priority = o.priority;
    return {
      pod: p,
      allocated: specResources(pod(uid, shaped(from))),
      deferredSinceMs: o.since ?? 0,
    };
  };
  it('puts resizes that do not grow first, then higher priority, then Guaranteed, then the longest waiting', () => {
    const order = (rs: ReturnType<typeof resizing>[]) =>
      [...rs].sort(comparePendingResizes).map((r) => r.pod.metadata.uid);
    expect(order([resizing('grow', '1', '2'), resizing('shrink', '2', '1')])).toEqual(['shrink', 'grow']);
    expect(order([resizing('low', '1', '2', { priority: 1 }), resizing('high', '1', '2', { priority: 100 })])).toEqual([
      'high',
      'low',
    ]);
    expect(order([resizing('burstable', '1', '2'), resizing('guaranteed', '1', '2', { limit: true })])).toEqual([
      'guaranteed',
      'burstable',
    ]);
    expect(order([resizing('later', '1', '2', { since: 2 }), resizing('first', '1', '2', { since: 1 })])).toEqual([
      'first',
      'later',
    ]);
  });
  it('lets a pending resize ranked higher take the room first', () => {
    // Each pod holds 500m of 2 cores; each asks for 1200m: only one fits.
    const low = resizing('low', '500m', '1200m', { priority: 1, since: 1 });
    const high = resizing('high', '500m', '1200m', { priority: 100, since: 2 });
    const active = [withResources(low.pod, low.allocated), withResources(high.pod, high.allocated)];
    const pending = [low, high];
    expect(admitResizeInOrder({ candidate: low, pending, active, allocatable: node })).toMatchObject({
      kind: 'deferred',
    });
    expect(admitResizeInOrder({ candidate: high, pending, active, allocatable: node })).toEqual({ kind: 'accepted' });
    // Alone, the lower one fits.
    expect(admitResizeInOrder({ candidate: low, pending: [low], active, allocatable: node })).toEqual({
      kind: 'accepted',
    });
  });
});

describe('the allocation manager', () => {
  const running = (id: string): PodRuntimeStatus => ({
    uid: 'a',
    name: 'a',
    namespace: 'default',
    sandboxes: [{ id: 's', ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.1' }],
    containers: [
      {
        id,
        name: 'main',
        state: 'running',
        createdAt: 1,
        startedAt: 1,
        finishedAt: 0,
        exitCode: 0,
        reason: '',
        message: '',
        image: 'busybox',
        imageRef: 'x',
        hash: '',
        restartCount: 0,
        logPath: '',
        sandboxId: 's',
      },
    ],
  });
  let memoryInUse = 0;
  const manager = (root: string, calls: string[], more: Partial<AllocationManagerDeps> = {}) =>
    new AllocationManager({
      rootDir: root,
      runtime: {
        updateContainerResources: async (id: string, linux: { cpu_quota?: number }) => {
          calls.push(`update ${id} quota=${linux.cpu_quota}`);
        },
        stopContainer: async (id: string) => {
          calls.push(`stop ${id}`);
        },
        listContainerStats: async () => [
          { attributes: { id: 'c1', metadata: { name: 'main' } }, memory: { usage_bytes: { value: memoryInUse } } },
        ],
      } as unknown as RuntimeService,
      resources: { memoryCapacityBytes: 4 * 1024 ** 3, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      allocatable: () => node,
      activePods: () => [],
      podCgroups: { resize: async () => void calls.push('pod cgroup') },
      logger: createLogger({ level: 'fatal' }),
      ...more,
    });

  it('allocates a new pod its spec, resizes it in place in upstream order, and a new manager resumes from the files', async () => {
    const root = join(dir, 'manager');
    const calls: string[] = [];
    const m = manager(root, calls);
    await m.load();
    expect((await m.sync(pod('a', { limits: { cpu: '200m' } }), running('c1'))).state).toEqual({});
    expect(calls).toEqual([]);
    await m.sync(pod('a', { limits: { cpu: '400m' } }), running('c1'));
    expect(calls).toEqual(['pod cgroup', 'update c1 quota=40000']);
    expect(m.actuatedResources('a')?.get('main')).toEqual({ limits: { cpu: '400m' } });
    expect(statSync(join(root, ALLOCATED_FILE)).mode & 0o777).toBe(0o600);
    const next = manager(root, []);
    await next.load();
    expect(next.allocatedResources(pod('a', {})).get('main')).toEqual({ limits: { cpu: '400m' } });
    expect(withResources(pod('a', {}), next.allocatedResources(pod('a', {}))).spec.containers[0].resources).toEqual({
      limits: { cpu: '400m' },
    });
    calls.length = 0;
    await m.sync(pod('a', { limits: { cpu: '100m' } }), running('c1'));
    expect(calls).toEqual(['update c1 quota=10000', 'pod cgroup']);
    await m.remove('a');
    expect((await readAllocations(root, ALLOCATED_FILE)).has('a')).toBe(false);
  });

  it('tells each resize as upstream: ResizeStarted and ResizeCompleted events, and the resize metrics', async () => {
    const calls: string[] = [];
    const events: string[] = [];
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    let others: Pod[] = [];
    const m: AllocationManager = manager(join(dir, 'told'), calls, {
      events: { record: (_ref, type, reason, message) => void events.push(`${type} ${reason} ${message}`) },
      metrics: registerResizeMetrics(metrics, () => m.resizeStates()),
      activePods: () => others,
    });
    await m.load();
    const at = (resources: Container['resources'], generation: number) => {
      const p = pod('a', resources);
      p.metadata.generation = generation;
      return p;
    };
    await m.sync(at({ requests: { cpu: '200m' }, limits: { cpu: '200m' } }, 1), running('c1'));
    expect(events).toEqual([]);
    await m.sync(at({ requests: { cpu: '300m' }, limits: { cpu: '400m' } }, 2), running('c1'));
    const summary =
      '{"containers":[{"name":"main","resources":{"limits":{"cpu":"400m"},"requests":{"cpu":"300m"}}}],"generation":2}';
    expect(events).toEqual([
      `Normal ResizeStarted Pod resize started: ${summary}`,
      `Normal ResizeCompleted Pod resize completed: ${summary}`,
    ]);
    // Deferred next to another pod, then accepted once it is gone: counted as accepted after being deferred.
    others = [pod('b', { requests: { cpu: '1500m' } })];
    expect(
      (await m.sync(at({ requests: { cpu: '1' }, limits: { cpu: '1' } }, 3), running('c1'))).state.pending,
    ).toMatchObject({
      reason: 'Deferred',
    });
    expect(metrics.text()).toMatch(/^kubelet_pod_pending_resizes\{reason="deferred"\} 1$/m);
    expect(events.at(-1)).toBe(
      'Normal ResizeDeferred Pod resize Deferred: {"containers":[{"name":"main","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"1"}}}],"generation":3,"error":"Node didn\'t have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"}',
    );
    others = [];
    await m.sync(at({ requests: { cpu: '1' }, limits: { cpu: '1' } }, 3), running('c1'));
    // Beyond the node: infeasible, counted once however often it is tried.
    await m.sync(at({ requests: { cpu: '3' }, limits: { cpu: '3' } }, 4), running('c1'));
    await m.sync(at({ requests: { cpu: '3' }, limits: { cpu: '3' } }, 4), running('c1'));
    const text = metrics.text();
    expect(text).toMatch(/^kubelet_pod_pending_resizes\{reason="deferred"\} 0$/m);
    expect(text).toMatch(/^kubelet_pod_pending_resizes\{reason="infeasible"\} 1$/m);
    expect(text).toMatch(/^kubelet_pod_in_progress_resizes 0$/m);
    expect(text).toMatch(/^kubelet_pod_deferred_accepted_resizes_total\{retry_trigger="periodic_retry"\} 1$/m);
    expect(text).toMatch(/^kubelet_pod_infeasible_resizes_total\{reason_detail="insufficient_node_allocatable"\} 1$/m);
    expect(text).toMatch(
      /^kubelet_container_requested_resizes_total\{operation="increase",requirement="limits",resource="cpu"\} 3$/m,
    );
    expect(text).toMatch(/^kubelet_pod_resize_duration_milliseconds_count\{success="true"\} 2$/m);
  });

  it('names each change of a container as upstream counts it, and summarizes a pod as upstream prints it', () => {
    const before = new Map([['c', { requests: { cpu: '100m', memory: '1Gi' }, limits: { memory: '2Gi' } }]]);
    const after = new Map([['c', { requests: { cpu: '200m' }, limits: { cpu: '1', memory: '1Gi' } }]]);
    expect(requestedResizes(before, after)).toEqual([
      { resource: 'cpu', requirement: 'requests', operation: 'increase' },
      { resource: 'memory', requirement: 'requests', operation: 'remove' },
      { resource: 'cpu', requirement: 'limits', operation: 'add' },
      { resource: 'memory', requirement: 'limits', operation: 'decrease' },
    ]);
    // As a Go kubelet v1.36 prints it (kubectl describe of a resized pod).
    const app: Pod = {
      metadata: { name: 'resize-demo', generation: 2 },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'x',
            resources: { requests: { memory: '128Mi', cpu: '300m' }, limits: { memory: '256Mi', cpu: '500m' } },
          },
        ],
      },
    };
    expect(resizeMessage('Pod resize started', app)).toBe(
      'Pod resize started: {"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"300m","memory":"128Mi"}}}],"generation":2}',
    );
    expect(
      resizeMessage(
        'Pod resize error',
        { ...app, spec: { ...app.spec, initContainers: [{ name: 'i', image: 'x' }] } },
        'boom',
      ),
    ).toBe(
      'Pod resize error: {"initContainers":[{"name":"i","resources":{}}],"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"300m","memory":"128Mi"}}}],"generation":2,"error":"boom"}',
    );
  });

  it("lowers a memory limit only above what is in use: else nothing is written and the resize stays in progress with upstream's reason", async () => {
    const calls: string[] = [];
    const events: string[] = [];
    const m = manager(join(dir, 'memory'), calls, {
      events: { record: (_ref, type, reason, message) => void events.push(`${type} ${reason} ${message}`) },
    });
    await m.load();
    const limited = (memory: string, cpu = '200m') => pod('a', { requests: { memory, cpu }, limits: { memory, cpu } });
    await m.sync(limited('512Mi'), running('c1'));
    memoryInUse = 300 * 2 ** 20;
    const refused = await m.sync(limited('128Mi', '300m'), running('c1'));
    const reason =
      'cannot decrease memory limits: [attempting to set pod memory limit (134217728) below current usage (314572800), attempting to set container "main" memory limit (134217728) below current usage (314572800)]';
    expect(refused.state).toEqual({ inProgress: { error: reason } });
    expect(calls).toEqual([]);
    expect(events.at(-1)).toMatch(
      /^Warning ResizeError Pod resize error: \{.*"error":"cannot decrease memory limits: /,
    );
    // Once the container uses less, the limit goes down, then the CPU up: memory (the container's, then the pod's
    // as it shrinks), then CPU (the pod's, then the container's as it grows).
    memoryInUse = 100 * 2 ** 20;
    expect((await m.sync(limited('128Mi', '300m'), running('c1'))).state).toEqual({});
    expect(calls).toEqual(['update c1 quota=20000', 'pod cgroup', 'pod cgroup', 'update c1 quota=30000']);
  });

  it('names each limit that would go below its usage, alone or as a Go aggregate', () => {
    const two = (a: string, b: string): Pod => ({
      metadata: { name: 'p', uid: 'p' },
      spec: {
        containers: [
          { name: 'a', image: 'x', resources: { limits: { memory: a } } },
          { name: 'b', image: 'x', resources: { limits: { memory: b } } },
        ],
      },
    });
    const usage = new Map([
      ['a', 100],
      ['b', 50],
    ]);
    // The pod's limit still covers both; a's own does not.
    expect(memoryDecreaseRefusal({ before: two('200', '200'), after: two('90', '300'), updated: ['a'], usage })).toBe(
      'cannot decrease memory limits: attempting to set container "a" memory limit (90) below current usage (100)',
    );
    // Raising a limit, or lowering it above the usage, is never refused.
    expect(
      memoryDecreaseRefusal({ before: two('200', '200'), after: two('150', '60'), updated: ['a', 'b'], usage }),
    ).toBe(undefined);
  });

  it('keeps a lower-priority resize Deferred while a higher-priority one waits for the same room, whichever syncs first', async () => {
    let active: Pod[] = [];
    const m = manager(join(dir, 'order'), [], { activePods: () => active });
    await m.load();
    const asking = (uid: string, cpu: string, priority: number) => {
      const p = pod(uid, { requests: { cpu } });
      p.spec.priority = priority;
      return p;
    };
    const blocker = pod('blocker', { requests: { cpu: '1000m' } });
    active = [asking('low', '500m', 1), asking('high', '500m', 100), blocker];
    for (const p of active) await m.sync(p, running(`c-${p.metadata.uid}`));
    const low = asking('low', '1200m', 1);
    const high = asking('high', '1200m', 100);
    active = [low, high, blocker];
    expect((await m.sync(low, running('c-low'))).state.pending?.reason).toBe('Deferred');
    expect((await m.sync(high, running('c-high'))).state.pending?.reason).toBe('Deferred');
    // The blocker is gone: room for one of them. The lower one syncs first, yet the higher one gets it.
    active = [low, high];
    expect((await m.sync(low, running('c-low'))).state.pending?.reason).toBe('Deferred');
    expect((await m.sync(high, running('c-high'))).state.pending).toBeUndefined();
    expect((await m.sync(low, running('c-low'))).state.pending?.reason).toBe('Deferred');
  });
});

describe('pod-level in-place resize (InPlacePodLevelResourcesVerticalScaling)', () => {
  const withPodLevel = (uid: string, resources: Container['resources']): Pod => ({
    metadata: { name: uid, namespace: 'default', uid },
    spec: { resources, containers: [{ name: 'main', image: 'busybox' }] },
  });
  const running = (uid: string): PodRuntimeStatus => ({
    uid,
    name: uid,
    namespace: 'default',
    sandboxes: [{ id: `sandbox-${uid}`, ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.1' }],
    containers: [
      {
        ...{ id: `c-${uid}`, name: 'main', state: 'running', createdAt: 1, startedAt: 1, finishedAt: 0, exitCode: 0 },
        ...{ reason: '', message: '', image: 'busybox', imageRef: 'x', hash: '', restartCount: 0, logPath: '' },
        sandboxId: `sandbox-${uid}`,
      },
    ],
  });

  it("writes the pod's own resources as upstream's PodLevelResources and reads them back", () => {
    const pods = new Map([
      [
        'p',
        new Map([
          ['main', {}],
          ['', { limits: { memory: '128Mi', cpu: '500m' }, requests: { cpu: '250m' } }],
        ]),
      ],
    ]);
    const text = encodeAllocations(pods);
    expect(JSON.parse(JSON.parse(text).data).entries.p).toEqual({
      ContainerResources: { main: {} },
      PodLevelResources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '250m' } },
    });
    expect(decodeAllocations(text).get('p')?.get('')).toEqual({
      limits: { cpu: '500m', memory: '128Mi' },
      requests: { cpu: '250m' },
    });
  });

  it("allocates spec.resources with the containers' and applies an allocation to the pod's spec", () => {
    const desired = withPodLevel('p', { requests: { cpu: '200m' }, limits: { cpu: '400m' } });
    const allocation = specResources(desired);
    expect(allocation.get('')).toEqual({ requests: { cpu: '200m' }, limits: { cpu: '400m' } });
    expect(specResources(pod('q', {})).has('')).toBe(false);
    const older = withResources(desired, new Map([['', { requests: { cpu: '100m' }, limits: { cpu: '200m' } }]]));
    expect(older.spec.resources).toEqual({ requests: { cpu: '100m' }, limits: { cpu: '200m' } });
    // A pod-level change alone is a resize: admitted against the node like a container's.
    expect(admitResize({ desired, allocated: specResources(older), allocatable: node, others: [] })).toEqual({
      kind: 'accepted',
    });
    const huge = withPodLevel('p', { requests: { cpu: '3' }, limits: { cpu: '3' } });
    expect(admitResize({ desired: huge, allocated: allocation, allocatable: node, others: [] })).toMatchObject({
      kind: 'infeasible',
      message: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000",
    });
    // The pod cgroup grows first when the pod-level limits grow, last when they shrink.
    expect(podCgroupFirst(older, desired, 'cpu')).toBe(true);
    expect(podCgroupFirst(desired, older, 'cpu')).toBe(false);
  });

  it('resizes the pod cgroup, then tells the runtime (Unimplemented tolerated); a kubelet restart resumes from the files', async () => {
    const root = join(dir, 'pod-level');
    const calls: string[] = [];
    let sandboxAnswer: Error | undefined = new KubeletError(
      'NotImplemented',
      'UpdatePodSandboxResources: unknown method',
    );
    const logged: string[] = [];
    const deps = (): AllocationManagerDeps => ({
      rootDir: root,
      runtime: {
        updateContainerResources: async (id: string) => void calls.push(`update ${id}`),
        updatePodSandboxResources: async (req: { pod_sandbox_id: string; resources: { cpu_quota?: number } }) => {
          calls.push(`sandbox ${req.pod_sandbox_id} quota=${req.resources.cpu_quota}`);
          if (sandboxAnswer) throw sandboxAnswer;
        },
        listContainerStats: async () => [],
      } as unknown as RuntimeService,
      resources: { memoryCapacityBytes: 4 * 1024 ** 3, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      allocatable: () => node,
      activePods: () => [],
      podCgroups: {
        resize: async (p: Pod) => void calls.push(`pod cgroup cpu=${p.spec.resources?.limits?.cpu}`),
      },
      sandboxResources: (p) => sandboxResources(p, { enforceCpuLimits: true, cpuPeriodUs: 100_000 }),
      logger: { ...createLogger({ level: 'fatal' }), warn: (_o: unknown, m: string) => void logged.push(m) } as never,
    });
    const m = new AllocationManager(deps());
    await m.load();
    const first = withPodLevel('p', { requests: { cpu: '200m' }, limits: { cpu: '400m' } });
    expect((await m.sync(first, running('p'))).state).toEqual({});
    expect(calls).toEqual([]);
    const grown = withPodLevel('p', { requests: { cpu: '300m' }, limits: { cpu: '800m' } });
    expect((await m.sync(grown, running('p'))).state).toEqual({});
    // No container has its own resources: only the pod cgroup changes, then the runtime is told.
    expect(calls).toEqual(['pod cgroup cpu=800m', 'sandbox sandbox-p quota=80000']);
    expect(m.actuatedResources('p')?.get('')).toEqual({ requests: { cpu: '300m' }, limits: { cpu: '800m' } });
    expect(logged).toEqual([]);
    // Another failure of the runtime is logged, never a failed resize.
    sandboxAnswer = new Error('sandbox busy');
    calls.length = 0;
    const shrunk = withPodLevel('p', { requests: { cpu: '300m' }, limits: { cpu: '600m' } });
    expect((await m.sync(shrunk, running('p'))).state).toEqual({});
    expect(calls).toEqual(['pod cgroup cpu=600m', 'sandbox sandbox-p quota=60000']);
    expect(logged).toEqual(['failed to update the pod sandbox resources']);
    const allocated = decodeAllocations(readFileSync(join(root, ALLOCATED_FILE), 'utf8')).get('p');
    expect(allocated?.get('')).toEqual({ requests: { cpu: '300m' }, limits: { cpu: '600m' } });
    // A restarted kubelet has the allocation, so the spec it sees is no new resize.
    const next = new AllocationManager(deps());
    await next.load();
    calls.length = 0;
    expect((await next.sync(shrunk, running('p'))).changed).toBe(false);
    expect(calls).toEqual([]);
    expect(next.effective(withPodLevel('p', { limits: { cpu: '999m' } })).spec.resources).toEqual({
      requests: { cpu: '300m' },
      limits: { cpu: '600m' },
    });
  });

  it('reports the pod-level resources as allocated and as applied in the pod status', () => {
    const spec = withPodLevel('p', { requests: { cpu: '300m', memory: '64Mi' }, limits: { cpu: '800m' } });
    const statusOf = (phase: string) =>
      generatePodStatus({ ...spec, status: { phase: phase as PodPhase } }, running('p'), {
        nowMs: 0,
        nodeIP: '10.0.0.9',
        runtimeName: 'process',
        reasons: new Map(),
        allocation: {
          allocated: specResources(spec),
          actuated: new Map([['', { requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '400m' } }]]),
          resize: { inProgress: {} },
        },
      });
    // As upstream, by the phase the API has: a running pod shows what its cgroup has…
    const status = statusOf('Running');
    expect(status.allocatedResources).toEqual({ cpu: '300m', memory: '64Mi' });
    expect(status.resources).toEqual({ requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '400m' } });
    expect(status.phase).toBe('Running');
    // …one the API does not show running yet its allocation.
    expect(statusOf('Pending').resources).toEqual({
      requests: { cpu: '300m', memory: '64Mi' },
      limits: { cpu: '800m' },
    });
  });
});
