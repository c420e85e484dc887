/**
 * The device manager's pure choices, as upstream's devicemanager: a container's devices (reused,
 * aligned to the chosen NUMA nodes, preferred by the plugin, then by ID), its topology hints, and
 * the pod's requests for the pod scope.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { finishDevices, planDevices, podDeviceRequests } from '../../../src/agent/devices/device-allocation.js';
import { byAffinity, deviceTopologyHints, resourceHints } from '../../../src/agent/devices/device-topology.js';

/** d0 on NUMA node 0, d1 and d2 on node 1, d3 with no topology. */
const numa = new Map<string, readonly number[] | undefined>([
  ['d0', [0]],
  ['d1', [1]],
  ['d2', [1]],
  ['d3', undefined],
]);
const all = ['d0', 'd1', 'd2', 'd3'];

describe('topology hints of a device resource', () => {
  it('hints every NUMA set with enough devices, preferred when no smaller set has as many at all', () => {
    expect(deviceTopologyHints([0, 1], numa, all, [], 2)).toEqual([
      { numaNodes: [1], preferred: true },
      { numaNodes: [0, 1], preferred: false },
    ]);
    // Only d0 left on node 0 and d2 on node 1: the pair is needed now, yet node 1 alone could have held two.
    expect(deviceTopologyHints([0, 1], numa, ['d0', 'd2'], [], 2)).toEqual([{ numaNodes: [0, 1], preferred: false }]);
    // A reused device outside a set rules the set out.
    expect(deviceTopologyHints([0, 1], numa, ['d1', 'd2'], ['d0'], 1)).toEqual([
      { numaNodes: [0], preferred: true },
      { numaNodes: [0, 1], preferred: false },
    ]);
  });

  it('has no preference without topology, none with too few, and the held devices again after a restart', () => {
    expect(
      resourceHints([0, 1], new Map([['x', undefined]]), { request: 1, held: [], available: ['x'], reusable: [] }),
    ).toBe(undefined);
    expect(resourceHints([0, 1], numa, { request: 5, held: [], available: all, reusable: [] })).toEqual([]);
    expect(resourceHints([0, 1], numa, { request: 1, held: ['d0'], available: [], reusable: [] })).toEqual([
      { numaNodes: [0], preferred: true },
      { numaNodes: [0, 1], preferred: false },
    ]);
    expect(resourceHints([0, 1], numa, { request: 2, held: ['d0'], available: all, reusable: [] })).toEqual([]);
  });

  it('splits devices by the chosen NUMA nodes', () => {
    expect(byAffinity(all, numa, [1])).toEqual({ aligned: ['d1', 'd2'], unaligned: ['d0'], withoutTopology: ['d3'] });
    expect(byAffinity(all, numa, undefined)).toEqual({ aligned: [], unaligned: [], withoutTopology: all });
  });
});

describe("a container's devices", () => {
  const done = (plan: ReturnType<typeof planDevices>, count: number, preferred: string[] = []) => {
    if ('shortfall' in plan) throw new Error('shortfall');
    return finishDevices(plan, count, preferred);
  };

  it('asks the preference among the chosen NUMA nodes when they have more than enough, and keeps to them', () => {
    const plan = planDevices(1, [], all, numa, [1]);
    expect(plan).toMatchObject({ ids: [], ask: { available: ['d1', 'd2'], mustInclude: [], size: 1 } });
    expect(done(plan, 1, ['d2'])).toEqual(['d2']);
    // A preference off the chosen nodes is not taken.
    expect(done(plan, 1, ['d0'])).toEqual(['d1']);
  });

  it('takes all of the chosen NUMA nodes first when they are not enough, then the preference, then the rest', () => {
    const plan = planDevices(3, [], all, numa, [1]);
    expect(plan).toMatchObject({
      ids: ['d1', 'd2'],
      ask: { available: ['d1', 'd2', 'd0', 'd3'], mustInclude: ['d1', 'd2'], size: 3 },
    });
    expect(done(plan, 3)).toEqual(['d1', 'd2', 'd0']);
    expect(done(plan, 3, ['d3'])).toEqual(['d1', 'd2', 'd3']);
    // Exactly enough on the chosen nodes: no question to the plugin.
    expect(planDevices(2, [], all, numa, [1])).toEqual({ ids: ['d1', 'd2'], preferFrom: [], fallback: [] });
  });

  it("reuses an init container's devices first, and names the shortfall as upstream", () => {
    expect(done(planDevices(2, ['d3'], ['d0', 'd1'], numa, undefined), 2)).toEqual(['d3', 'd0']);
    expect(planDevices(1, ['d3'], [], numa, undefined)).toEqual({ ids: ['d3'], preferFrom: [], fallback: [] });
    expect(planDevices(3, ['d3'], ['d0'], numa, undefined)).toEqual({ shortfall: { requested: 2, available: 1 } });
  });

  it("weighs the pod scope's request as upstream: the larger of the biggest init container and the rest together", () => {
    const limits = (n: number) => ({ resources: { limits: { 'example.com/w': String(n) } } });
    const pod = {
      metadata: { name: 'p', uid: 'u' },
      spec: {
        initContainers: [
          { name: 'i1', image: 'x', ...limits(3) },
          { name: 'i2', image: 'x', ...limits(1) },
          { name: 'side', image: 'x', restartPolicy: 'Always', ...limits(1) },
        ],
        containers: [{ name: 'main', image: 'x', ...limits(1) }],
      },
    } as Pod;
    expect(podDeviceRequests(pod, new Set(['example.com/w']))).toEqual(new Map([['example.com/w', 3]]));
  });
});
