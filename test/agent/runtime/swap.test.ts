/**
 * Container swap as upstream's kuberuntime (NodeSwap on): none by default where the kernel
 * accounts swap per cgroup (v1: memory+swap capped at the memory limit; v2: memory.swap.max 0),
 * LimitedSwap's proportional share for Burstable containers on cgroup v2 only, and nothing written
 * where there is no swap controller.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { linuxContainerResources } from '../../../src/agent/runtime/linux-resources.js';
import { detectSwapController, swapTotalBytes, type SwapContext } from '../../../src/agent/runtime/swap.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-swap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const Gi = 2 ** 30;
const pod = (resources: Container['resources'], extra: Partial<Pod['spec']> = {}): Pod =>
  ({
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: { containers: [{ name: 'c', image: 'i', resources }], ...extra },
  }) as Pod;
const resourcesOf = (p: Pod, swap?: SwapContext) =>
  linuxContainerResources(p, p.spec.containers[0], {
    memoryCapacityBytes: 8 * Gi,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriodUs: 100_000,
    swap,
  });
const v2 = (behavior: SwapContext['behavior']): SwapContext => ({
  controller: 'v2',
  behavior,
  capacityBytes: 4 * Gi,
  memoryCapacityBytes: 8 * Gi,
});
const burstable = { requests: { memory: '1Gi' }, limits: { memory: '2Gi' } };

describe('container swap', () => {
  it('NoSwap (the default): v1 caps memory+swap at the memory limit, v2 writes memory.swap.max 0', () => {
    const v1: SwapContext = {
      controller: 'v1',
      behavior: 'NoSwap',
      capacityBytes: 4 * Gi,
      memoryCapacityBytes: 8 * Gi,
    };
    expect(resourcesOf(pod(burstable), v1)).toMatchObject({
      memory_limit_in_bytes: 2 * Gi,
      memory_swap_limit_in_bytes: 2 * Gi,
    });
    expect(resourcesOf(pod({}), v1).memory_swap_limit_in_bytes).toBe(0);
    expect(resourcesOf(pod(burstable), v2('NoSwap')).unified).toEqual({ 'memory.swap.max': '0' });
    // No swap controller: nothing is written (the runtime's default), as upstream.
    expect(resourcesOf(pod(burstable))).not.toHaveProperty('memory_swap_limit_in_bytes');
    expect(resourcesOf(pod(burstable))).not.toHaveProperty('unified');
  });

  it("LimitedSwap: a Burstable container's share of the node's swap by its memory request, on cgroup v2 only", () => {
    // 1 GiB of 8 GiB requested: an eighth of the 4 GiB of swap.
    expect(resourcesOf(pod(burstable), v2('LimitedSwap')).unified).toEqual({ 'memory.swap.max': String(Gi / 2) });
    const none = { 'memory.swap.max': '0' };
    // Guaranteed, BestEffort, request = limit, a critical pod: no swap.
    expect(
      resourcesOf(
        pod({ requests: { memory: '1Gi', cpu: '1' }, limits: { memory: '1Gi', cpu: '1' } }),
        v2('LimitedSwap'),
      ).unified,
    ).toEqual(none);
    expect(resourcesOf(pod({}), v2('LimitedSwap')).unified).toEqual(none);
    expect(
      resourcesOf(pod({ requests: { memory: '1Gi', cpu: '100m' }, limits: { memory: '1Gi' } }), v2('LimitedSwap'))
        .unified,
    ).toEqual(none);
    expect(resourcesOf(pod(burstable, { priority: 2_000_001_000 }), v2('LimitedSwap')).unified).toEqual(none);
    // cgroup v1: no swap whatever the behavior.
    expect(resourcesOf(pod(burstable), { ...v2('LimitedSwap'), controller: 'v1' }).memory_swap_limit_in_bytes).toBe(
      2 * Gi,
    );
  });

  it("finds the swap controller as upstream: v1's memory.memsw files, v2's memory.swap.max in this process's cgroup", () => {
    mkdirSync(join(dir, 'v1', 'memory'), { recursive: true });
    expect(detectSwapController(join(dir, 'v1'))).toBeUndefined();
    writeFileSync(join(dir, 'v1', 'memory', 'memory.memsw.limit_in_bytes'), '9223372036854771712\n');
    expect(detectSwapController(join(dir, 'v1'))).toBe('v1');
    mkdirSync(join(dir, 'v2', 'system.slice', 'k.service'), { recursive: true });
    writeFileSync(join(dir, 'v2', 'cgroup.controllers'), 'cpu memory\n');
    expect(detectSwapController(join(dir, 'v2'), '0::/system.slice/k.service\n')).toBeUndefined();
    writeFileSync(join(dir, 'v2', 'system.slice', 'k.service', 'memory.swap.max'), 'max\n');
    expect(detectSwapController(join(dir, 'v2'), '0::/system.slice/k.service\n')).toBe('v2');
    expect(swapTotalBytes('MemTotal:  100 kB\nSwapTotal:       2048 kB\n')).toBe(2 * 1024 * 1024);
    expect(swapTotalBytes('MemTotal: 1 kB\n')).toBe(0);
  });
});
