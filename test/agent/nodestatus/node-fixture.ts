/** The machine and node settings of the node status manager's tests: a small node with nothing reserved. */
import type { MachineInfo } from '../../../src/agent/nodestatus/machine-info.js';
import type { NodeSettings } from '../../../src/agent/nodestatus/node-object.js';
import { NodeStatusManager, type NodeStatusManagerDeps } from '../../../src/agent/nodestatus/node-status-manager.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';

/** A 2-core, 4 GiB machine, with `bootID` (the Rebooted event compares it with the Node's). */
export function testMachine(bootID = 'b'): MachineInfo {
  return {
    machineID: 'm',
    systemUUID: 's',
    bootID,
    kernelVersion: '6.1',
    osImage: 'Debian',
    architecture: 'amd64',
    cpuCores: 2,
    memoryBytes: 4 * 2 ** 30,
    ephemeralStorageBytes: 50 * 2 ** 30,
    hugePages: [],
  };
}

/** The settings of node `nodeName` (also its hostname), without labels, taints or reservations. */
export function testNodeSettings(nodeName: string): NodeSettings {
  return {
    nodeName,
    nodeIP: '10.0.0.5',
    hostname: nodeName,
    port: 10250,
    maxPods: 110,
    nodeLabels: {},
    registerWithTaints: [],
    providerID: '',
    kubeReserved: {},
    systemReserved: {},
    evictionHard: {},
    kubeletVersion: 'v1.36.2',
  };
}

/**
 * A node status manager of node `nodeName` that registers the Node (a 409 when it exists), on a test machine and a
 * runtime that is ready, started until the returned function is called.
 */
export async function startRegistering(
  kubeconfig: string,
  nodeName: string,
  o: Partial<NodeStatusManagerDeps> = {},
): Promise<() => void> {
  const stop = new AbortController();
  const manager = new NodeStatusManager({
    client: await createKubeClient(kubeconfig, { timeoutMs: 3000 }),
    settings: testNodeSettings(nodeName),
    registerNode: true,
    machine: testMachine(),
    runtime: async () => ({ runtimeVersion: 'containerd://1.6', runtimeErrors: [], images: [] }),
    events: { record: () => {} },
    clock: new FakeClock(1_000_000),
    logger: silentLogger,
    updateFrequencyMs: 10_000,
    reportFrequencyMs: 300_000,
    random: () => 0.5,
    ...o,
  });
  manager.start({ signal: stop.signal });
  return () => stop.abort();
}
