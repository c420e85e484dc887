/**
 * topologyManagerPolicyOptions as upstream's v1.36: prefer-closest-numa-nodes picks, among NUMA
 * node sets of one size, the one whose nodes are closest (the kernel's distance table), and
 * max-allowable-numa-nodes raises the 8-node limit; an unknown option or a bad value stops the
 * start with upstream's message.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentConfig } from '../../../src/agent/agent-config.js';
import { wireResourceManagers } from '../../fixtures/resource-managers.js';
import { mergeHints, type TopologyHint } from '../../../src/agent/topologymanager/hint-merge.js';
import { averageDistance, readNumaDistances } from '../../../src/agent/topologymanager/numa-distances.js';
import { topologyPolicyOptions } from '../../../src/agent/topologymanager/policy-options.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-topology-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Four NUMA nodes where 0 is close to 2 and 1 to 3, as two sockets numbered across. */
const table = ['10 30 12 30', '30 10 30 12', '12 30 10 30', '30 12 30 10'];
const sysNode = join(dir, 'node');
table.forEach((row, node) => {
  mkdirSync(join(sysNode, `node${node}`), { recursive: true });
  writeFileSync(join(sysNode, `node${node}`, 'distance'), `${row}\n`);
});

const hint = (numaNodes: number[], preferred = true): TopologyHint => ({ numaNodes, preferred });
/** A resource that needs two NUMA nodes: every pair, each preferred (the narrowest possible). */
const pairs = [
  [0, 1],
  [0, 2],
  [0, 3],
  [1, 2],
  [1, 3],
  [2, 3],
].map((p) => hint(p));

describe('topology manager policy options', () => {
  it('parse as upstream, with its messages for what they refuse', () => {
    expect(topologyPolicyOptions()).toEqual({ preferClosestNuma: false, maxAllowableNumaNodes: 8 });
    expect(topologyPolicyOptions({ 'prefer-closest-numa-nodes': 'True', 'max-allowable-numa-nodes': '16' })).toEqual({
      preferClosestNuma: true,
      maxAllowableNumaNodes: 16,
    });
    expect(() => topologyPolicyOptions({ 'prefer-closest-numa-nodes': 'yes' })).toThrow(
      'bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "yes": invalid syntax',
    );
    expect(() => topologyPolicyOptions({ 'max-allowable-numa-nodes': 'many' })).toThrow(
      'unable to convert policy option to integer "max-allowable-numa-nodes": strconv.Atoi: parsing "many": invalid syntax',
    );
    expect(() => topologyPolicyOptions({ 'max-allowable-numa-nodes': '4' })).toThrow(
      'the minimum value of "max-allowable-numa-nodes" should not be less than 8',
    );
    expect(() => topologyPolicyOptions({ 'numa-closest': 'true' })).toThrow(
      'unknown Topology Manager Policy option: "numa-closest"',
    );
  });

  it('read the NUMA distances from sysfs, and say which node cannot be read', () => {
    const distances = readNumaDistances([0, 1, 2, 3], sysNode);
    expect(distances.get(2)).toEqual([12, 30, 10, 30]);
    expect(averageDistance(distances, [0, 2])).toBe(11);
    expect(averageDistance(distances, [0, 1])).toBe(20);
    expect(() => readNumaDistances([4], sysNode)).toThrow(
      /^cannot discover NUMA topology: error getting NUMA distances from sysfs: ENOENT/,
    );
  });

  it('prefer-closest-numa-nodes picks the closest pair, not the lowest numbered; single-numa-node is unchanged', () => {
    const distances = readNumaDistances([0, 1, 2, 3], sysNode);
    const nodes = [0, 1, 2, 3];
    expect(mergeHints('best-effort', nodes, [pairs]).hint).toEqual(hint([0, 1]));
    expect(mergeHints('best-effort', nodes, [pairs], distances).hint).toEqual(hint([0, 2]));
    expect(mergeHints('restricted', nodes, [pairs], distances)).toEqual({ hint: hint([0, 2]), admit: true });
    // As close as each other ({0,2} and {1,3}): the lower numbered. A narrower set still wins over a closer wider one.
    expect(mergeHints('best-effort', nodes, [[hint([1, 3]), hint([0, 2])]], distances).hint).toEqual(hint([0, 2]));
    expect(mergeHints('best-effort', nodes, [[hint([0, 2]), hint([3])]], distances).hint).toEqual(hint([3]));
    // Unpreferred hints of the widest need are told apart the same way.
    const unpreferred = pairs.map((h) => hint([...h.numaNodes!], false));
    expect(mergeHints('best-effort', nodes, [unpreferred], distances).hint).toEqual(hint([0, 2], false));
    const single = [hint([1]), hint([0])];
    expect(mergeHints('single-numa-node', nodes, [single], distances).hint).toEqual(hint([0]));
  });

  it('stop the start as upstream when an option is wrong, before the CPU manager is made', () => {
    const start = (options: Record<string, string>) =>
      wireResourceManagers(
        {
          rootDir: dir,
          node: { kubeReserved: {}, systemReserved: {} },
          topologyManager: { policy: 'best-effort', scope: 'container', options },
        } as unknown as AgentConfig,
        join(dir, 'missing'),
      ).start(new AbortController().signal);
    expect(() => start({ 'max-allowable-numa-nodes': '2' })).toThrow(
      'the minimum value of "max-allowable-numa-nodes" should not be less than 8',
    );
    // This machine's NUMA nodes have no distance files under the directory given.
    expect(() => start({ 'prefer-closest-numa-nodes': 'true' })).toThrow(/^cannot discover NUMA topology/);
    expect(() => start({ 'max-allowable-numa-nodes': '8' })).not.toThrow();
  });

  it("counts the machine's NUMA nodes as cAdvisor lists them: memory-only nodes too", () => {
    // Nine NUMA nodes in sysfs, eight of them without CPUs (CXL memory, say): over upstream's limit of 8.
    const sysNodeDir = join(dir, 'nine-nodes');
    for (let id = 0; id < 9; id++) mkdirSync(join(sysNodeDir, `node${id}`), { recursive: true });
    const start = (policy: string) =>
      wireResourceManagers(
        {
          rootDir: dir,
          node: { kubeReserved: {}, systemReserved: {} },
          topologyManager: { policy, scope: 'container' },
        } as unknown as AgentConfig,
        sysNodeDir,
      ).start(new AbortController().signal);
    expect(() => start('best-effort')).toThrow('unsupported on machines with more than 8 NUMA Nodes');
    // The none policy compares no hints: no limit.
    expect(() => start('none')).not.toThrow();
  });
});
