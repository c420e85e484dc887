/** The merge of several providers' topology hints, as upstream's HintMerger (policy.go). */
import { describe, expect, it } from 'vitest';
import { mergeHints, type TopologyHint } from '../../../src/agent/topologymanager/hint-merge.js';

const hint = (numaNodes: number[] | undefined, preferred: boolean): TopologyHint =>
  numaNodes ? { numaNodes, preferred } : { preferred };

describe('hints of several resources', () => {
  // Exclusive CPUs that fit either node; devices only on node 1.
  const cpu = [hint([0], true), hint([1], true), hint([0, 1], false)];
  const device = [hint([1], true), hint([0, 1], false)];

  it('takes the NUMA nodes every resource can have, preferred when each one prefers the same', () => {
    for (const policy of ['best-effort', 'restricted', 'single-numa-node'] as const)
      expect(mergeHints(policy, [0, 1], [cpu, device])).toEqual({ hint: hint([1], true), admit: true });
    // A resource without preference changes nothing.
    expect(mergeHints('restricted', [0, 1], [cpu, undefined, device]).hint).toEqual(hint([1], true));
  });

  it('is not preferred when the resources prefer different nodes, and then keeps to the widest need', () => {
    // CPUs need both nodes; the device prefers node 0.
    const wideCpu = [hint([0, 1], true)];
    const nodeZero = [hint([0], true), hint([0, 1], false)];
    expect(mergeHints('restricted', [0, 1], [wideCpu, nodeZero])).toEqual({
      hint: hint([0, 1], false),
      admit: false,
    });
    // best-effort admits it on both nodes (the CPUs' minimum), not on node 0 where they do not fit.
    expect(mergeHints('best-effort', [0, 1], [wideCpu, nodeZero])).toEqual({ hint: hint([0, 1], false), admit: true });
  });

  it('refuses a resource that cannot be had, and under single-numa-node one that needs two nodes', () => {
    expect(mergeHints('restricted', [0, 1], [cpu, []]).admit).toBe(false);
    // best-effort goes on with what the others need at least: one node, the lowest.
    expect(mergeHints('best-effort', [0, 1], [cpu, []])).toEqual({ hint: hint([0], false), admit: true });
    expect(mergeHints('single-numa-node', [0, 1], [cpu, [hint([0, 1], true)]])).toEqual({
      hint: hint(undefined, false),
      admit: false,
    });
  });

  it("breaks ties between equally wide sets by upstream's mask order (the lower bits)", () => {
    const pairs = [hint([0, 3], true), hint([1, 2], true)];
    expect(mergeHints('restricted', [0, 1, 2, 3], [pairs]).hint).toEqual(hint([1, 2], true));
  });
});
