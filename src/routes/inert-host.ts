/** A KubeletHost with no pods and no runtime: for generating the API document and for tests. */
import { notFound } from '../lib/errors.js';
import type { KubeletHost } from './host.js';

/** An empty host named `nodeName`; `overrides` replace single methods. */
export function inertHost(nodeName = 'node', overrides: Partial<KubeletHost> = {}): KubeletHost {
  return {
    nodeName,
    getPods: () => [],
    podsVersion: () => '0',
    getPodByName: () => undefined,
    getRunningPods: async () => [],
    getContainerLogs: async (r) => {
      throw notFound(`pod "${r.podName}" does not exist`);
    },
    getStreamUrl: async (r) => {
      throw notFound(`pod ${r.namespace}/${r.podName} does not exist`);
    },
    runInContainer: async (r) => {
      throw notFound(`pod ${r.namespace}/${r.podName} does not exist`);
    },
    healthChecks: () => [],
    statsSummary: () => undefined,
    metricsText: async () => '',
    machineSpec: () => ({}),
    recordHttpRequest: () => {},
    recordHttpInflight: () => {},
    ...overrides,
  };
}
