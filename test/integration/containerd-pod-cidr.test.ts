/**
 * The Node's pod CIDR reaches the runtime, as upstream's kubelet passes it (CRI UpdateRuntimeConfig): a real
 * containerd whose CNI configuration is a template (`conf_template`, as some installers set it up) reports its network
 * not ready, so the Node is NotReady with upstream's message, until it knows the pod CIDR; once the node IPAM
 * controller (here: the test) gives the Node its `spec.podCIDRs`, containerd writes its CNI configuration from the
 * template, the Node turns Ready and a pod gets an IP in that CIDR.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient } from '../../src/cri/client.js';
import type { CriRuntime } from '../../src/cri/services.js';
import { startContainerd, TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, startCluster, type Cluster } from '../e2e/cluster-helpers.js';
import { until } from '../e2e/helpers.js';
import { teardown } from './containerd-helpers.js';

const node = 'ctrd-pod-cidr-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-pod-cidr-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;
type Obj = Record<string, any>;
const ready = () => c.api.store.get('nodes', '', node)?.status?.conditions?.find((k: Obj) => k.type === 'Ready');

beforeAll(async () => {
  ctrd = await startContainerd({ cni: 'template' });
  cri = createCriClient(ctrd.endpoint);
  c = await startCluster({ dir, node, config: ['nodeStatusUpdateFrequency: 1s'], extra: ctrd.kubeletFlags });
}, 60_000);

afterAll(async () => {
  await c?.close();
  await teardown({ cri, ctrd, dir });
}, 60_000);

describe("the Node's pod CIDR on containerd with a CNI config template", () => {
  it('NotReady while containerd has no CNI config; Ready once the Node has its pod CIDR; a pod gets an IP in it', async () => {
    const notReady = await until(() => (ready()?.status === 'False' ? ready() : undefined), 20_000, 'node NotReady');
    expect(notReady.message).toMatch(/^container runtime network not ready: NetworkReady=false/);
    const written = join(ctrd.dir, 'templated', '10-containerd-net.conflist');
    expect(existsSync(written)).toBe(false);

    // The node IPAM controller's part.
    const n = c.api.store.get('nodes', '', node)!;
    c.api.store.update('nodes', { ...n, spec: { ...n.spec, podCIDR: ctrd.subnet, podCIDRs: [ctrd.subnet] } });

    await until(() => existsSync(written), 20_000, 'containerd writes its CNI config from the template');
    expect(JSON.parse(readFileSync(written, 'utf8')).plugins[0].ipam.ranges).toEqual([[{ subnet: ctrd.subnet }]]);
    await until(() => ready()?.status === 'True', 30_000, 'node Ready');

    c.api.store.create(
      'pods',
      boundPod('networked', node, {
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
      }),
    );
    const pod = await until(
      () => {
        const p = c.api.store.get('pods', 'default', 'networked');
        return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      40_000,
      'networked Running',
    );
    const prefix = ctrd.subnet.split('.').slice(0, 3).join('.');
    expect(pod.status.podIP.startsWith(`${prefix}.`)).toBe(true);
  }, 120_000);
});
