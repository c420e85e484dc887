/**
 * Node events of the status manager against the fake apiserver, as upstream's: Starting and, on a cgroup v1 host,
 * CgroupV1 at start; Rebooted when the Node's boot ID is not the machine's; the pressure conditions' events once.
 * And its pod CIDR step (upstream's updateNode): the runtime is told the Node's pod CIDRs, a change reported at once.
 */
import { describe, expect, it } from 'vitest';
import { NodeStatusManager, CGROUP_V1_WARNING } from '../../../src/agent/nodestatus/node-status-manager.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { PodCidr } from '../../../src/agent/runtime/pod-cidr.js';
import { testMachine, testNodeSettings } from './node-fixture.js';

const fake = useFakeApiserver();

const machine = testMachine('boot-now');
const settings = testNodeSettings('n1');

describe('node events', () => {
  it('Rebooted when the Node has another boot ID; CgroupV1 at start on a v1 host; each condition event once', async () => {
    fake.api.store.create('nodes', {
      metadata: { name: 'n1' },
      status: {
        nodeInfo: { bootID: 'boot-before' },
        conditions: [{ type: 'MemoryPressure', status: 'False' }],
      },
    });
    const events: [string, string, string][] = [];
    const manager = new NodeStatusManager({
      client: await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 }),
      settings,
      registerNode: false,
      machine,
      runtime: async () => ({ runtimeVersion: 'containerd://1.6', runtimeErrors: [], images: [] }),
      events: { record: (_ref, type, reason, message) => events.push([type, reason, message]) },
      clock: new FakeClock(1_000_000),
      logger,
      updateFrequencyMs: 10_000,
      reportFrequencyMs: 60_000,
      cgroupVersion: 1,
    });
    // Started with its loop stopped at once: the start's events, then one report made here.
    const stop = new AbortController();
    stop.abort();
    manager.start({ signal: stop.signal });
    expect(await manager.updateOnce()).toBe(true);
    expect(events).toContainEqual(['Normal', 'Starting', 'Starting kubelet.']);
    expect(events).toContainEqual(['Warning', 'CgroupV1', CGROUP_V1_WARNING]);
    expect(events).toContainEqual(['Warning', 'Rebooted', 'Node n1 has been rebooted, boot id: boot-now']);
    // MemoryPressure was already False on the Node: no event for it; the others are new.
    const reasons = events.map(([, reason]) => reason);
    expect(reasons).not.toContain('NodeHasSufficientMemory');
    expect(reasons).toEqual(expect.arrayContaining(['NodeHasNoDiskPressure', 'NodeHasSufficientPID']));
    expect(fake.api.store.get('nodes', '', 'n1')?.status?.nodeInfo?.bootID).toBe('boot-now');
  });
});

describe("the Node's pod CIDRs", () => {
  it('are told to the runtime, joined, once; a change is reported before the report period is over', async () => {
    fake.api.store.create('nodes', { metadata: { name: 'n2' }, status: {} });
    const told: string[] = [];
    const podCidr = new PodCidr({
      runtime: { updateRuntimeConfig: async (config) => void told.push(config.network_config!.pod_cidr!) },
      logger,
    });
    let podCIDRs: string[] | undefined;
    const manager = new NodeStatusManager({
      client: await createKubeClient(fake.kubeconfigFor('system:node:n2'), { timeoutMs: 3000 }),
      settings: testNodeSettings('n2'),
      registerNode: false,
      machine,
      runtime: async () => ({ runtimeVersion: 'containerd://1.6', runtimeErrors: [], images: [] }),
      events: { record: () => {} },
      clock: new FakeClock(1_000_000),
      logger,
      updateFrequencyMs: 10_000,
      reportFrequencyMs: 300_000,
      random: () => 0,
      podCIDRs: () => podCIDRs,
      podCidr,
    });
    expect(await manager.updateOnce()).toBe(true);
    // Nothing changed and the report period has not passed: no report.
    expect(await manager.updateOnce()).toBe(false);
    expect(told).toEqual([]);
    podCIDRs = ['10.244.1.0/24', 'fd00:10:244:1::/64'];
    expect(await manager.updateOnce()).toBe(true);
    expect(told).toEqual(['10.244.1.0/24,fd00:10:244:1::/64']);
    expect(podCidr.value()).toBe('10.244.1.0/24,fd00:10:244:1::/64');
    expect(await manager.updateOnce()).toBe(false);
    expect(told).toHaveLength(1);
  });
});
