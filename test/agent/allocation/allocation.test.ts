/**
 * Allocation and in-place resize: upstream's checkpoint files (a Go kubelet v1.36's read and
 * written back byte for byte), the resize admission (Infeasible, Deferred, accepted), the actuation
 * (policy and order), and the manager against a recording runtime.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
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
  changedResources,
  podCgroupFirst,
  specResources,
  withResources,
} from '../../../src/agent/allocation/resize.js';
import { AllocationManager } from '../../../src/agent/allocation/allocation-manager.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';

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

  it('grows the pod cgroup before the containers and shrinks it after them', () => {
    const before = pod('a', { limits: { cpu: '200m' } });
    expect(podCgroupFirst(before, pod('a', { limits: { cpu: '400m' } }))).toBe(true);
    expect(podCgroupFirst(before, pod('a', { limits: { cpu: '100m' } }))).toBe(false);
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
  const manager = (root: string, calls: string[]) =>
    new AllocationManager({
      rootDir: root,
      runtime: {
        updateContainerResources: async (id: string, linux: { cpu_quota?: number }) => {
          calls.push(`update ${id} quota=${linux.cpu_quota}`);
        },
        stopContainer: async (id: string) => {
          calls.push(`stop ${id}`);
        },
      } as unknown as RuntimeService,
      resources: { memoryCapacityBytes: 4 * 1024 ** 3, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      allocatable: () => node,
      activePods: () => [],
      podCgroups: { resize: async () => void calls.push('pod cgroup') },
      logger: createLogger({ level: 'fatal' }),
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
});
