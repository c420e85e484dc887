/** The machine and node settings of the node status manager's tests: a small node with nothing reserved. */
import type { MachineInfo } from '../../../src/agent/nodestatus/machine-info.js';
import type { NodeSettings } from '../../../src/agent/nodestatus/node-object.js';

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
