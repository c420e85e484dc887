/**
 * The memory manager as the agent wires it (compose-resource-managers.ts): made after the CPU manager from the
 * configuration and the NUMA nodes in sysfs, its start refused with upstream's messages (an unknown
 * policy, reservations that do not match Node Allocatable, a state file of another policy), and at
 * admission a Guaranteed pod's memory pinned, its container's cpuset.mems given to the runtime.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import type { AgentConfig } from '../../../src/agent/agent-config.js';
import { wireResourceManagers } from '../../fixtures/resource-managers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-memory-compose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A sysfs node directory with two NUMA nodes of 2 GiB each. */
const sysNodeDir = join(dir, 'sys-node');
for (const id of [0, 1]) {
  mkdirSync(join(sysNodeDir, `node${id}`, 'hugepages', 'hugepages-2048kB'), { recursive: true });
  writeFileSync(
    join(sysNodeDir, `node${id}`, 'meminfo'),
    `Node ${id} MemTotal:        2097152 kB\nNode ${id} MemFree: 1 kB\n`,
  );
  writeFileSync(join(sysNodeDir, `node${id}`, 'hugepages', 'hugepages-2048kB', 'nr_hugepages'), '0\n');
}

let roots = 0;
const cfg = (memoryManager: AgentConfig['memoryManager']) => {
  const rootDir = join(dir, `root-${roots++}`);
  mkdirSync(rootDir);
  return {
    rootDir,
    node: { kubeReserved: {}, systemReserved: {}, evictionHard: { 'memory.available': '100Mi' } },
    memoryManager,
  } as unknown as AgentConfig;
};
const wire = (c: AgentConfig) => wireResourceManagers(c, sysNodeDir);
const machine = { memoryBytes: 4 * 2 ** 30, hugePages: [{ pageSizeKb: 2048, pages: 0 }] };
const guaranteed: Pod = {
  metadata: { name: 'g', namespace: 'default', uid: 'u-g' },
  spec: {
    containers: [
      {
        name: 'c',
        image: 'i',
        resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
      },
    ],
  },
} as Pod;

describe('memory manager wiring', () => {
  it("pins a Guaranteed pod's memory and names its NUMA nodes as the container's cpuset.mems", () => {
    const c = cfg({ policy: 'Static', reservedMemory: [{ numaNode: 0, limits: { memory: '100Mi' } }] });
    const m = wire(c);
    m.start(new AbortController().signal, machine);
    expect(m.admit(guaranteed, [])).toBeUndefined();
    expect(m.podMemory.cpusetMems('u-g', 'c')).toBe('0');
    expect(m.podMemory.memoryOf('u-g', 'c')).toEqual([{ numaAffinity: [0], type: 'memory', size: 2 ** 30 }]);
    expect(m.podMemory.counts()).toEqual({ pinningRequests: 1, pinningErrors: 0 });
    expect(JSON.parse(readFileSync(join(c.rootDir, 'memory_manager_state'), 'utf8'))).toMatchObject({
      policyName: 'Static',
      entries: { 'u-g': { c: [{ numaAffinity: [0], type: 'memory', size: 2 ** 30 }] } },
    });
  });

  it("stops the start with upstream's messages", () => {
    const start = (c: AgentConfig) => () => wire(c).start(new AbortController().signal, machine);
    expect(start(cfg({ policy: 'Dynamic', reservedMemory: [] }))).toThrow(
      'failed to initialize memory manager: unknown policy: "Dynamic"',
    );
    expect(start(cfg({ policy: 'BestEffort', reservedMemory: [] }))).toThrow(
      'failed to initialize memory manager: policy "BestEffort" is not available for platform "linux"',
    );
    expect(start(cfg({ policy: 'Static', reservedMemory: [] }))).toThrow(
      'failed to initialize memory manager: the total amount "0" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature',
    );
    // The node ran with None: its state file must go before Static can start (upstream's advice to drain).
    const c = cfg({ policy: 'None', reservedMemory: [] });
    wire(c).start(new AbortController().signal, machine);
    c.memoryManager = { policy: 'Static', reservedMemory: [{ numaNode: 1, limits: { memory: '100Mi' } }] };
    expect(start(c)).toThrow(
      /^start memory manager error: could not restore state from checkpoint: \[memorymanager\] configured policy "Static" differs from state checkpoint policy "None"/,
    );
  });
});
