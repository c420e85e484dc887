/** Node status computation: allocatable, conditions and their times, change detection. */
import { runtimeFeatures } from '../../../src/agent/runtime/runtime-state.js';
import { describe, expect, it } from 'vitest';
import {
  initialNode,
  nodeAddresses,
  nodeConditions,
  nodeImages,
  nodeResources,
  nodeStatus,
  withoutHeartbeats,
  type NodeSettings,
} from '../../../src/agent/nodestatus/node-object.js';
import type { MachineInfo } from '../../../src/agent/nodestatus/machine-info.js';
import { hugePageSizeKb, osImageOf, readHugePages } from '../../../src/agent/nodestatus/machine-info.js';
import { binaryQuantity } from '../../../src/api/quantity.js';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const machine: MachineInfo = {
  machineID: 'm',
  systemUUID: 's',
  bootID: 'b',
  kernelVersion: '6.1',
  osImage: 'Debian',
  architecture: 'amd64',
  cpuCores: 4,
  memoryBytes: 8 * 2 ** 30,
  ephemeralStorageBytes: 100 * 2 ** 30,
  hugePages: [
    { pageSizeKb: 2048, pages: 0 },
    { pageSizeKb: 1048576, pages: 0 },
  ],
};
const settings: NodeSettings = {
  nodeName: 'n1',
  nodeIP: '10.0.0.5',
  hostname: 'n1',
  port: 10250,
  maxPods: 110,
  nodeLabels: { role: 'edge' },
  registerWithTaints: [],
  providerID: '',
  kubeReserved: { cpu: '250m', memory: '512Mi' },
  systemReserved: { memory: '512Mi', 'ephemeral-storage': '1Gi' },
  evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
  kubeletVersion: 'v1.36.2',
};

describe('node object', () => {
  it('allocatable = capacity − reserved − hard eviction thresholds', () => {
    const r = nodeResources(settings, machine);
    // Bytes in Go's canonical BinarySI spelling, as a Go kubelet's resource.Quantity and the apiserver give them.
    expect(r.capacity).toEqual({
      cpu: '4',
      memory: '8Gi',
      pods: '110',
      'ephemeral-storage': '100Gi',
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
    });
    expect(r.allocatable.cpu).toBe('3750m');
    expect(r.allocatable.memory).toBe(`${8 * 1024 - 1024 - 100}Mi`);
    // 10 % as upstream holds a percentage: a float32 (0.100000001…), so 160 bytes more than a tenth.
    expect(r.allocatable['ephemeral-storage']).toBe(String(100 * 2 ** 30 - 2 ** 30 - 10737418400));
    expect(r.allocatableNumbers).toEqual({ cpuMilli: 3750, memoryBytes: 8 * 2 ** 30 - 1124 * 2 ** 20, pods: 110 });
  });
  it('spells capacity and allocatable as the Go kubelet v1.36.2 of test/fixtures/go-kubelet-1.36 did', () => {
    const goNode = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'node.json'), 'utf8'),
    ) as { status: { capacity: Record<string, string>; allocatable: Record<string, string> } };
    // Its machine: 2 cores, 24684084 KiB of memory, a root filesystem of 264212084 KiB; memory.available 100Mi and
    // nodefs.available 1% (what its allocatable shows was held back).
    const r = nodeResources(
      {
        ...settings,
        kubeReserved: {},
        systemReserved: {},
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%' },
      },
      { ...machine, cpuCores: 2, memoryBytes: 24684084 * 1024, ephemeralStorageBytes: 264212084 * 1024 },
    );
    expect(r.capacity).toEqual(goNode.status.capacity);
    expect(r.allocatable).toEqual(goNode.status.allocatable);
  });
  it('reports each huge page pool as upstream: its bytes, less what is reserved of it; that memory is not allocatable memory', () => {
    const withPools = {
      ...machine,
      hugePages: [
        { pageSizeKb: 2048, pages: 512 },
        { pageSizeKb: 1048576, pages: 1 },
        { pageSizeKb: 64, pages: 3 },
      ],
    };
    const r = nodeResources(
      { ...settings, systemReserved: { ...settings.systemReserved, 'hugepages-2Mi': '256Mi' } },
      withPools,
    );
    expect(r.capacity).toMatchObject({
      'hugepages-2Mi': '1Gi',
      'hugepages-1Gi': '1Gi',
      'hugepages-64Ki': '192Ki',
      memory: '8Gi',
    });
    expect(r.allocatable).toMatchObject({
      'hugepages-2Mi': '768Mi',
      'hugepages-1Gi': '1Gi',
      'hugepages-64Ki': '192Ki',
    });
    expect(r.allocatableHugePages).toEqual({
      'hugepages-2Mi': 768 * 2 ** 20,
      'hugepages-1Gi': 2 ** 30,
      'hugepages-64Ki': 192 * 1024,
    });
    const hugeBytes = 2 ** 30 + 2 ** 30 + 192 * 1024;
    expect(r.allocatableNumbers.memoryBytes).toBe(8 * 2 ** 30 - 1124 * 2 ** 20 - hugeBytes);
    // No pools known (no sysfs): no huge page resources at all.
    expect(
      Object.keys(nodeResources(settings, { ...machine, hugePages: [] }).capacity).filter((k) =>
        k.startsWith('hugepages-'),
      ),
    ).toEqual([]);
  });
  it('reads the huge page pools of /sys/kernel/mm/hugepages', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tsk-hugepages-'));
    for (const [name, n] of [
      ['hugepages-2048kB', '16\n'],
      ['hugepages-1048576kB', '0\n'],
      ['other', '5\n'],
    ]) {
      mkdirSync(join(root, name));
      writeFileSync(join(root, name, 'nr_hugepages'), n);
    }
    expect(await readHugePages(root)).toEqual([
      { pageSizeKb: 2048, pages: 16 },
      { pageSizeKb: 1048576, pages: 0 },
    ]);
    expect(await readHugePages(join(root, 'missing'))).toEqual([]);
    expect(hugePageSizeKb('hugepages-2048kB')).toBe(2048);
    expect(binaryQuantity(0)).toBe('0');
    expect(binaryQuantity(1536)).toBe('1536');
    expect(binaryQuantity(3 * 2 ** 20)).toBe('3Mi');
    rmSync(root, { recursive: true, force: true });
  });
  it('registers with the default labels plus --node-labels, taints and providerID', () => {
    const n = initialNode(
      { ...settings, registerWithTaints: [{ key: 'k', effect: 'NoSchedule' }], providerID: 'aws:///i-1' },
      machine,
    ) as any;
    expect(n.metadata.labels).toEqual({
      'beta.kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': 'n1',
      'kubernetes.io/os': 'linux',
      role: 'edge',
    });
    expect(n.spec).toEqual({ providerID: 'aws:///i-1', taints: [{ key: 'k', effect: 'NoSchedule' }] });
  });
  it('Ready follows the runtime; transition time moves only on a change, heartbeat every time', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const notYet = nodeConditions(undefined, undefined, t0).find((c) => c.type === 'Ready')!;
    expect(notYet).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime status check may not have completed yet',
    });
    const ready = nodeConditions([], [notYet], t0 + 10_000);
    expect(ready.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
      lastTransitionTime: '2026-01-01T00:00:10Z',
    });
    const still = nodeConditions([], ready, t0 + 20_000).find((c) => c.type === 'Ready')!;
    expect(still).toMatchObject({
      lastTransitionTime: '2026-01-01T00:00:10Z',
      lastHeartbeatTime: '2026-01-01T00:00:20Z',
    });
    const down = nodeConditions(['container runtime is down', 'network plugin not ready'], ready, t0 + 30_000).find(
      (c) => c.type === 'Ready',
    )!;
    expect(down).toMatchObject({
      status: 'False',
      message: '[container runtime is down, network plugin not ready]',
      lastTransitionTime: '2026-01-01T00:00:30Z',
    });
    expect(ready.map((c) => c.type)).toEqual(['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready']);
  });
  it('a status differing only in heartbeats is unchanged; images are sorted by size and capped at 50', () => {
    const images = Array.from({ length: 60 }, (_, i) => ({ id: `sha256:${i}`, names: [`img${i}`], sizeBytes: i }));
    const a = nodeStatus(settings, {
      machine,
      runtimeVersion: 'containerd://1.6',
      runtimeErrors: [],
      images,
      nowMs: 1000,
    });
    const b = nodeStatus(settings, {
      machine,
      runtimeVersion: 'containerd://1.6',
      runtimeErrors: [],
      images,
      previous: a.conditions as any,
      nowMs: 61_000,
    });
    expect(withoutHeartbeats(a)).toEqual(withoutHeartbeats(b));
    expect(a).not.toEqual(b);
    expect((a.images as any[]).length).toBe(50);
    expect((a.images as any[])[0].sizeBytes).toBe(59);
  });
  it('lists the runtime handlers when the runtime names any (status.runtimeHandlers), and leaves the field out otherwise', () => {
    const handlers = [{ name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: false } }];
    const input = { machine, runtimeVersion: 'containerd://2.0', runtimeErrors: [], images: [], nowMs: 1000 };
    expect(nodeStatus(settings, { ...input, runtimeHandlers: handlers }).runtimeHandlers).toEqual(handlers);
    expect('runtimeHandlers' in nodeStatus(settings, { ...input, runtimeHandlers: [] })).toBe(false);
    expect('runtimeHandlers' in nodeStatus(settings, input)).toBe(false);
  });
  it('reports the node swap in nodeInfo.swap.capacity when it has any (NodeSwap)', () => {
    const input = { machine, runtimeVersion: 'containerd://2.1', runtimeErrors: [], images: [], nowMs: 1000 };
    const withSwap = nodeStatus(settings, { ...input, machine: { ...machine, swapBytes: 2 * 1024 ** 3 } });
    expect((withSwap.nodeInfo as { swap?: unknown }).swap).toEqual({ capacity: 2 * 1024 ** 3 });
    expect('swap' in (nodeStatus(settings, input).nodeInfo as object)).toBe(false);
  });
  it('reports status.features as the runtime states them (CRI Status features), none when it states none', () => {
    const input = { machine, runtimeVersion: 'containerd://2.1', runtimeErrors: [], images: [], nowMs: 1000 };
    expect(runtimeFeatures({ features: { supplemental_groups_policy: true } })).toEqual({
      supplementalGroupsPolicy: true,
    });
    expect(runtimeFeatures({ features: {} })).toEqual({ supplementalGroupsPolicy: false });
    expect(runtimeFeatures({})).toBeUndefined();
    expect(nodeStatus(settings, { ...input, features: { supplementalGroupsPolicy: true } }).features).toEqual({
      supplementalGroupsPolicy: true,
    });
    expect('features' in nodeStatus(settings, input)).toBe(false);
  });
  it('lists images of one size in the same order whatever order the runtime gives them in (the greater id first)', () => {
    const images = [
      { id: 'sha256:aa', names: ['a:1'], sizeBytes: 10 },
      { id: 'sha256:cc', names: ['c:1'], sizeBytes: 10 },
      { id: 'sha256:bb', names: ['b:1'], sizeBytes: 10 },
      { id: 'sha256:dd', names: ['d:1'], sizeBytes: 20 },
    ];
    const expected = ['d:1', 'c:1', 'b:1', 'a:1'];
    expect(nodeImages(images, -1).map((i) => i.names[0])).toEqual(expected);
    expect(nodeImages([...images].reverse(), -1).map((i) => i.names[0])).toEqual(expected);
  });
  it('nodeStatusMaxImages caps the list (-1: all, 0: none); at most 5 names per image', () => {
    const images = Array.from({ length: 8 }, (_, i) => ({
      id: `sha256:${i}`,
      names: Array.from({ length: i + 1 }, (_, j) => `img${i}:${j}`),
      sizeBytes: i,
    }));
    expect(nodeImages(images, 3).map((i) => i.sizeBytes)).toEqual([7, 6, 5]);
    expect(nodeImages(images, -1)).toHaveLength(8);
    expect(nodeImages(images, 0)).toEqual([]);
    expect(nodeImages(images, 1)[0].names).toEqual(['img7:0', 'img7:1', 'img7:2', 'img7:3', 'img7:4']);
    const s = nodeStatus(
      { ...settings, maxImages: 2 },
      { machine, runtimeVersion: 'containerd://1.6', runtimeErrors: [], images, nowMs: 1000 },
    );
    expect((s.images as { sizeBytes: number }[]).map((i) => i.sizeBytes)).toEqual([7, 6]);
  });
  it('localStorageCapacityIsolation=false leaves ephemeral-storage out of capacity and allocatable', () => {
    const r = nodeResources({ ...settings, localStorageCapacityIsolation: false }, machine);
    expect(['ephemeral-storage' in r.capacity, 'ephemeral-storage' in r.allocatable]).toEqual([false, false]);
    expect('ephemeral-storage' in nodeResources(settings, machine).capacity).toBe(true);
  });
  it('podsPerCore bounds the pods capacity by cores × podsPerCore, never above maxPods', () => {
    expect(nodeResources({ ...settings, podsPerCore: 10 }, machine).capacity.pods).toBe('40');
    expect(nodeResources({ ...settings, podsPerCore: 10 }, machine).allocatableNumbers.pods).toBe(40);
    expect(nodeResources({ ...settings, podsPerCore: 100 }, machine).allocatable.pods).toBe('110');
    expect(nodeResources({ ...settings, podsPerCore: 0 }, machine).capacity.pods).toBe('110');
  });
  it('an external cloud provider: the uninitialized taint, the provided IP only when named, and only the hostname without one', () => {
    const ext = { ...settings, externalCloudProvider: true };
    const named = initialNode({ ...ext, nodeIPSpecified: true }, machine) as any;
    expect(named.spec.taints).toEqual([
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
    ]);
    expect(named.metadata.annotations['alpha.kubernetes.io/provided-node-ip']).toBe('10.0.0.5');
    expect(
      (initialNode(ext, machine) as any).metadata.annotations['alpha.kubernetes.io/provided-node-ip'],
    ).toBeUndefined();
    expect((initialNode(settings, machine) as any).spec.taints).toBeUndefined();
    expect(nodeAddresses(ext)).toEqual([{ type: 'Hostname', address: 'n1' }]);
    expect(nodeAddresses({ ...ext, nodeIPSpecified: true })).toEqual([
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'Hostname', address: 'n1' },
    ]);
    expect(nodeAddresses(settings)).toEqual(nodeAddresses({ ...ext, nodeIPSpecified: true }));
    const dual = { ...ext, nodeIPSpecified: true, secondaryNodeIP: 'fd00::5' };
    expect(nodeAddresses(dual).map((a) => a.address)).toEqual(['10.0.0.5', 'fd00::5', 'n1']);
    expect((initialNode(dual, machine) as any).metadata.annotations['alpha.kubernetes.io/provided-node-ip']).toBe(
      '10.0.0.5,fd00::5',
    );
  });
  it('reads PRETTY_NAME from os-release', () => {
    expect(osImageOf('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')).toBe(
      'Debian GNU/Linux 12 (bookworm)',
    );
  });
});
