/**
 * The Node for admission: the apiserver's labels and taints once read; the registered Node's
 * before; an unreachable apiserver does not hold the start back.
 */
import { describe, expect, it } from 'vitest';
import { NodeInformer } from '../../../src/agent/nodestatus/node-informer.js';
import type { AdmissionNode } from '../../../src/agent/admission/predicate.js';
import type { KubeClient } from '../../../src/lib/kube-client.js';
import { createLogger } from '../../../src/lib/logger.js';
import { realClock } from '../../../src/lib/clock.js';

const registered: AdmissionNode = {
  name: 'n1',
  labels: { 'kubernetes.io/hostname': 'n1' },
  taints: [],
  allocatable: { cpuMilli: 1000, memoryBytes: 1, pods: 10 },
};
const logger = createLogger({ level: 'fatal' });

function client(o: { node?: object; fail?: boolean }): KubeClient {
  return {
    request: async () => {
      if (o.fail) throw new Error('connect ECONNREFUSED');
      return { status: 200, body: { metadata: { resourceVersion: '5' }, items: o.node ? [o.node] : [] } };
    },
    watch: (_req: unknown, _on: unknown) => new Promise(() => {}),
  } as unknown as KubeClient;
}

describe('NodeInformer', () => {
  it("gives the apiserver's labels, taints and extended resources once the Node is read, the registered Node's before", async () => {
    const node = {
      metadata: { name: 'n1', labels: { disktype: 'ssd' } },
      spec: { taints: [{ key: 'q', effect: 'NoExecute' }] },
      status: { allocatable: { cpu: '2', 'example.com/dongle': '4' } },
    };
    const informer = new NodeInformer({ client: client({ node }), nodeName: 'n1', clock: realClock, logger });
    expect(informer.admissionNode(registered)).toBe(registered);
    const ctl = new AbortController();
    informer.start(ctl.signal);
    await informer.synced;
    expect(informer.admissionNode(registered)).toEqual({
      ...registered,
      labels: { disktype: 'ssd' },
      taints: [{ key: 'q', effect: 'NoExecute' }],
      extended: { 'example.com/dongle': 4 },
    });
    expect(informer.status()).toEqual(node.status);
    ctl.abort();
  });

  it('reads the Node again on demand, and keeps that read until the watch brings a newer one', async () => {
    const read = { metadata: { name: 'n1', resourceVersion: '9', labels: { tier: 'fresh' } } };
    const listed = { metadata: { name: 'n1', resourceVersion: '7', labels: {} } };
    const c = {
      request: async (req: { path: string }) =>
        req.path === '/api/v1/nodes/n1'
          ? { status: 200, body: read }
          : { status: 200, body: { metadata: { resourceVersion: '7' }, items: [listed] } },
      watch: () => new Promise(() => {}),
    } as unknown as KubeClient;
    const informer = new NodeInformer({ client: c, nodeName: 'n1', clock: realClock, logger });
    expect(await informer.refresh()).toBe(true);
    expect(informer.admissionNode(registered).labels).toEqual({ tier: 'fresh' });
    // The watch's list, older than the read: the read stays.
    const ctl = new AbortController();
    informer.start(ctl.signal);
    await informer.synced;
    expect(informer.admissionNode(registered).labels).toEqual({ tier: 'fresh' });
    ctl.abort();
    const failing = new NodeInformer({ client: client({ fail: true }), nodeName: 'n1', clock: realClock, logger });
    expect(await failing.refresh()).toBe(false);
  });

  it('counts as synced when the apiserver cannot be reached (static pods do not wait for it)', async () => {
    const informer = new NodeInformer({ client: client({ fail: true }), nodeName: 'n1', clock: realClock, logger });
    const ctl = new AbortController();
    informer.start(ctl.signal);
    await informer.synced;
    expect(informer.admissionNode(registered)).toBe(registered);
    ctl.abort();
  });
});
