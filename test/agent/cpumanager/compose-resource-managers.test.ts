/**
 * The CPU manager as the agent wires it: a pod whose CPUs cannot be allocated is refused at
 * admission with upstream's reason and message; a state file that does not fit stops the start
 * with upstream's wrapping.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import type { AgentConfig } from '../../../src/agent/agent-config.js';
import { wireResourceManagers } from '../../fixtures/resource-managers.js';
import { cpusPerCore, readCpuTopology } from '../../../src/agent/cpumanager/topology.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cpus-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cpus = readCpuTopology().size;

const cfg = (policy: 'none' | 'static') =>
  ({
    rootDir: dir,
    node: { kubeReserved: { cpu: '1' }, systemReserved: {} },
    cpuManager: { policy, reconcilePeriodMs: 60_000, reservedCpus: '' },
  }) as unknown as AgentConfig;
const wire = (policy: 'none' | 'static', c: AgentConfig = cfg(policy)) => wireResourceManagers(c);
const guaranteed = (n: number): Pod =>
  ({
    metadata: { name: 'big', namespace: 'default', uid: 'u-big' },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'i',
          resources: { requests: { cpu: `${n}`, memory: '1Mi' }, limits: { cpu: `${n}`, memory: '1Mi' } },
        },
      ],
    },
  }) as Pod;

describe('composeResourceManagers', () => {
  it("refuses a pod whose CPUs cannot be allocated: UnexpectedAdmissionError, upstream's message", () => {
    const abort = new AbortController();
    const m = wire('static');
    m.start(abort.signal);
    try {
      expect(m.admit(guaranteed(cpus), [])).toEqual({
        admit: false,
        reason: 'UnexpectedAdmissionError',
        message: `Allocate failed due to not enough cpus available to satisfy request: requested=${cpus}, available=${cpus - 1}, which is unexpected`,
      });
      expect(m.admit(guaranteed(1), [])).toBeUndefined();
      expect(m.podCpus.exclusiveCpus('u-big', 'c')).toHaveLength(1);
    } finally {
      abort.abort();
    }
  });

  it('stops the start when the state was written for another policy, naming the file to delete', () => {
    writeFileSync(join(dir, 'cpu_manager_state'), '{"policyName":"static","defaultCpuSet":"0","checksum":0}');
    expect(() => wire('none').start(new AbortController().signal)).toThrow(
      `start cpu manager error: could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file "${join(dir, 'cpu_manager_state')}" before restarting Kubelet`,
    );
    expect(() =>
      wire('static', {
        ...cfg('static'),
        node: { kubeReserved: {}, systemReserved: {} },
      } as unknown as AgentConfig).start(new AbortController().signal),
    ).toThrow(
      'failed to initialize cpu manager: [cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero',
    );
  });
});

describe('alignment counters (upstream container_aligned_compute_resources)', () => {
  const topologyConfig = (scope: 'container' | 'pod', options: Record<string, string> = {}) =>
    ({
      ...cfg('static'),
      cpuManager: { policy: 'static', reconcilePeriodMs: 60_000, reservedCpus: '', options },
      topologyManager: { policy: 'single-numa-node', scope },
    }) as unknown as AgentConfig;

  it('counts every container admitted under single-numa-node, and each refused for want of alignment', () => {
    rmSync(join(dir, 'cpu_manager_state'), { force: true });
    const abort = new AbortController();
    const m = wire('static', topologyConfig('container'));
    m.start(abort.signal);
    try {
      expect(m.admit(guaranteed(1), [])).toBeUndefined();
      expect(m.admit(guaranteed(cpus + 1), [])).toMatchObject({ admit: false, reason: 'TopologyAffinityError' });
      expect(m.podCpus.counts().alignment).toEqual({
        numaNode: { container: { aligned: 1, failed: 1 }, pod: { aligned: 0, failed: 0 } },
        physicalCpu: { aligned: 0, failed: 0 },
      });
    } finally {
      abort.abort();
    }
  });

  it('counts the pod once with the pod scope, and whole cores with full-pcpus-only', () => {
    rmSync(join(dir, 'cpu_manager_state'), { force: true });
    const abort = new AbortController();
    const m = wire('static', topologyConfig('pod', { 'full-pcpus-only': 'true' }));
    m.start(abort.signal);
    try {
      const perCore = cpusPerCore(readCpuTopology());
      const admitted = m.admit(guaranteed(perCore), []);
      const { numaNode, physicalCpu } = m.podCpus.counts().alignment;
      expect(numaNode.pod).toEqual(admitted === undefined ? { aligned: 1, failed: 0 } : { aligned: 0, failed: 0 });
      expect(numaNode.container).toEqual({ aligned: 0, failed: 0 });
      expect(physicalCpu).toEqual(admitted === undefined ? { aligned: 1, failed: 0 } : { aligned: 0, failed: 1 });
    } finally {
      abort.abort();
    }
  });
});
