/**
 * The device manager against a real grpc-js device plugin (test/fixtures/sample-device-plugin.ts):
 * the plugin's preferred devices are chosen, Allocate is asked at admission (a failure refuses the
 * pod as upstream), and PreStartContainer before each start of a container when the plugin asks
 * for it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeviceManager } from '../../../src/agent/devices/device-manager.js';
import {
  admitWithTopology,
  type TopologyManagerConfig,
} from '../../../src/agent/topologymanager/topology-admission.js';
import type { Pod } from '../../../src/api/types.js';
import { createLogger } from '../../../src/lib/logger.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import { registerDevicePluginMetrics } from '../../../src/agent/metrics/device-plugin-metrics.js';
import { startSamplePlugin, type SamplePlugin } from '../../fixtures/sample-device-plugin.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { STOP_GRACE_MS } from '../../../src/agent/devices/device-plugins.js';
import { readDeviceCheckpoint } from '../../../src/agent/devices/device-checkpoint.js';

const RESOURCE = 'example.com/widget';

function podAsking(uid: string, count: number): Pod {
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      containers: [{ name: 'main', image: 'x', resources: { limits: { [RESOURCE]: String(count) } } }],
    },
  } as Pod;
}

/** The pod's admission by the topology manager with the device manager alone, without a policy. */
const admit = (manager: DeviceManager, pod: Pod) =>
  admitWithTopology({ devices: manager }, { policy: 'none', scope: 'container', numaNodes: [0] }, pod, []);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setUp(options: Partial<Parameters<typeof startSamplePlugin>[0]> = {}, clock?: FakeClock) {
  const dir = mkdtempSync(join(tmpdir(), 'device-manager-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
  const manager = new DeviceManager({
    dir,
    logger: createLogger({ level: 'fatal' }),
    metrics: registerDevicePluginMetrics(metrics),
    clock,
  });
  await manager.start();
  cleanups.push(() => manager.stop());
  const plugin: SamplePlugin = await startSamplePlugin({
    dir,
    name: 'widget',
    resource: RESOURCE,
    devices: ['w0', 'w1', 'w2', 'w3'],
    mountHostPath: '/tmp',
    deviceHostPath: '/dev/null',
    ...options,
  });
  cleanups.push(() => plugin.close());
  await until(() => manager.allocatable()[RESOURCE] === 4);
  return { manager, plugin, metrics, dir };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(done()).toBe(true);
}

describe('device manager with a real plugin', () => {
  it('takes the devices the plugin prefers, and asks Allocate at admission', async () => {
    const { manager, plugin } = await setUp({
      prefer: (available, size) => [...available].sort().reverse().slice(0, size),
    });
    const first = admit(manager, podAsking('p1', 2));
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBeUndefined();
    expect(plugin.preferenceRequests).toEqual([{ available: ['w0', 'w1', 'w2', 'w3'], size: 2 }]);
    expect(manager.devicesOf('p1', 'main').map((d) => d.ids)).toEqual([['w3', 'w2']]);
    expect(plugin.allocations).toEqual([['w3', 'w2']]);
    // The next pod is offered only what is free.
    expect(await admit(manager, podAsking('p2', 1))).toBeUndefined();
    expect(plugin.preferenceRequests[1]).toEqual({ available: ['w0', 'w1'], size: 1 });
    expect(manager.devicesOf('p2', 'main')[0].ids).toEqual(['w1']);
    // The answers given at admission reach the container without asking again.
    const [devices] = await manager.containerDevices(podAsking('p1', 2), { name: 'main', image: 'x' });
    expect(devices.envs).toEqual({ WIDGET_IDS: 'w3,w2' });
    expect(plugin.allocations).toHaveLength(2);
  });

  it('frees the devices of pods no longer active once every pod source has delivered (upstream UpdateAllocatedDevices)', async () => {
    const { manager } = await setUp();
    const config: TopologyManagerConfig = { policy: 'none', scope: 'container', numaNodes: [0] };
    const running = podAsking('runs', 1);
    expect(await admit(manager, podAsking('finished', 3))).toBeUndefined();
    expect(await admit(manager, running)).toBeUndefined();
    const next = podAsking('next', 2);
    // Until the sources are seen, a pod the kubelet does not know yet may still hold its devices.
    expect(admitWithTopology({ devices: manager }, config, next, [running], undefined, false)).toMatchObject({
      reason: 'UnexpectedAdmissionError',
    });
    // Then the finished pod (no longer active, its API object kept) holds nothing.
    expect(await admitWithTopology({ devices: manager }, config, next, [running], undefined, true)).toBeUndefined();
    expect(manager.devicesOf('finished', 'main')).toEqual([]);
    expect(manager.devicesOf('runs', 'main')[0].ids).toHaveLength(1);
    expect(manager.devicesOf('next', 'main')[0].ids).toHaveLength(2);
  });

  it("removes a resource whose plugin stays away for upstream's grace period of 5 minutes, from the checkpoint too", async () => {
    const clock = new FakeClock();
    const { manager, plugin, dir } = await setUp({}, clock);
    await plugin.close();
    await until(() => manager.allocatable()[RESOURCE] === 0);
    // Within the grace period the resource stays, its devices unhealthy.
    clock.advance(STOP_GRACE_MS - 1000);
    expect(manager.capacity()).toEqual({ [RESOURCE]: 4 });
    expect(manager.removedResources()).toEqual([]);
    clock.advance(1000);
    expect(manager.capacity()).toEqual({});
    expect(manager.allocatable()).toEqual({});
    expect(manager.removedResources()).toEqual([RESOURCE]);
    // The checkpoint is written after the removal, asynchronously.
    let registered = (await readDeviceCheckpoint(dir)).registered;
    for (let i = 0; i < 200 && Object.keys(registered).length; i++) {
      await new Promise((r) => setTimeout(r, 25));
      registered = (await readDeviceCheckpoint(dir)).registered;
    }
    expect(registered).toEqual({});
    // A plugin that registers the resource again brings it back.
    const again = await startSamplePlugin({
      dir,
      name: 'widget-again',
      resource: RESOURCE,
      devices: ['w0', 'w1'],
      mountHostPath: '/tmp',
      deviceHostPath: '/dev/null',
    });
    cleanups.push(() => again.close());
    await until(() => manager.allocatable()[RESOURCE] === 2);
    expect(manager.removedResources()).toEqual([]);
  });

  it('removes a resource known from the checkpoint whose plugin does not register again within the grace period', async () => {
    const clock = new FakeClock();
    const { manager, plugin, dir } = await setUp({}, clock);
    await plugin.close();
    await manager.stop();
    const restarted = new DeviceManager({ dir, logger: createLogger({ level: 'fatal' }), clock });
    await restarted.start();
    cleanups.push(() => restarted.stop());
    expect(restarted.capacity()).toEqual({ [RESOURCE]: 4 });
    clock.advance(STOP_GRACE_MS);
    expect(restarted.capacity()).toEqual({});
    expect(restarted.removedResources()).toEqual([RESOURCE]);
  });

  it("counts registrations and times each Allocate in upstream's metrics", async () => {
    const { manager, plugin, metrics } = await setUp();
    await admit(manager, podAsking('p1', 1));
    await plugin.register();
    const text = metrics.text();
    expect(text).toContain(
      '# HELP kubelet_device_plugin_registration_total [ALPHA] Cumulative number of device plugin registrations. Broken down by resource name.',
    );
    expect(text).toMatch(/^kubelet_device_plugin_registration_total\{resource_name="example.com\/widget"\} 2$/m);
    expect(text).toMatch(
      /^kubelet_device_plugin_alloc_duration_seconds_count\{resource_name="example.com\/widget"\} 1$/m,
    );
  });

  it('refuses a pod asking for more than is free without asking the plugin', async () => {
    const { manager, plugin } = await setUp();
    expect(admit(manager, podAsking('p1', 5))).toEqual({
      reason: 'UnexpectedAdmissionError',
      message:
        'Allocate failed due to requested number of devices unavailable for example.com/widget. Requested: 5, Available: 4, which is unexpected',
    });
    expect(plugin.allocations).toEqual([]);
  });

  it("refuses the pod with upstream's reason when Allocate fails, and holds nothing for it", async () => {
    const { manager } = await setUp({ failAllocate: 'widget controller offline' });
    const r = await admit(manager, podAsking('p1', 1));
    expect(r).toMatchObject({ reason: 'UnexpectedAdmissionError' });
    expect(r?.message).toBe(
      'Allocate failed due to rpc error: code = Unknown desc = widget controller offline, which is unexpected',
    );
    expect(manager.devicesOf('p1', 'main')).toEqual([]);
  });

  it('calls PreStartContainer before every start of the container when the plugin asks for it', async () => {
    const { manager, plugin } = await setUp({ preStartRequired: true });
    const pod = podAsking('p1', 1);
    await admit(manager, pod);
    expect(plugin.preStarts).toEqual([]);
    await manager.containerDevices(pod, pod.spec.containers[0]);
    await manager.containerDevices(pod, pod.spec.containers[0]);
    expect(plugin.preStarts).toEqual([['w0'], ['w0']]);
  });

  it("takes a container's devices on the NUMA nodes the topology manager chose, and refuses what no one node holds", async () => {
    // w1 and w2 on NUMA node 0, w0 and w3 on node 1: ID order alone would take w0 first.
    const { manager, plugin } = await setUp({ numa: { w0: [1], w1: [0], w2: [0], w3: [1] } });
    const probe = podAsking('x', 1);
    expect(manager.containerHints(probe, probe.spec.containers[0], [0, 1])).toEqual([
      [
        { numaNodes: [0], preferred: true },
        { numaNodes: [1], preferred: true },
        { numaNodes: [0, 1], preferred: false },
      ],
    ]);
    const single: TopologyManagerConfig = { policy: 'single-numa-node', scope: 'container', numaNodes: [0, 1] };
    const admitOn = (pod: Pod, t = single) => admitWithTopology({ devices: manager }, t, pod, []);
    expect(await admitOn(podAsking('p1', 2))).toBeUndefined();
    expect(manager.devicesOf('p1', 'main')[0].ids).toEqual(['w1', 'w2']);
    expect(await admitOn(podAsking('p2', 1))).toBeUndefined();
    expect(manager.devicesOf('p2', 'main')[0].ids).toEqual(['w0']);
    // One device left, on node 1: two are more than any node has.
    expect(await admitOn(podAsking('p3', 2))).toEqual({
      reason: 'TopologyAffinityError',
      message: 'Resources cannot be allocated with Topology locality',
    });
    expect(manager.devicesOf('p3', 'main')).toEqual([]);
    expect(plugin.allocations).toEqual([['w1', 'w2'], ['w0']]);
    manager.release('p1');
    manager.release('p2');
    // Three fit on no single node: restricted admits the pair of nodes, the narrowest that can hold them.
    expect(await admitOn(podAsking('p4', 3), { ...single, policy: 'restricted' })).toBeUndefined();
    expect(manager.devicesOf('p4', 'main')[0].ids).toHaveLength(3);
    expect(await admitOn(podAsking('p5', 1), { ...single, policy: 'restricted' })).toBeUndefined();
  });

  it("gives an init container's devices to the next container first; a sidecar keeps what it takes", async () => {
    const { manager } = await setUp();
    const limits = { resources: { limits: { [RESOURCE]: '1' } } };
    const pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'p' },
      spec: {
        initContainers: [
          { name: 'init', image: 'x', ...limits },
          { name: 'sidecar', image: 'x', restartPolicy: 'Always', ...limits },
        ],
        containers: [
          { name: 'main', image: 'x', ...limits },
          { name: 'other', image: 'x', ...limits },
        ],
      },
    } as Pod;
    expect(await admit(manager, pod)).toBeUndefined();
    const ids = (c: string) => manager.devicesOf('p', c)[0].ids;
    // As upstream: the sidecar (run after the init container ended) reuses w0, which is then its own.
    expect([ids('init'), ids('sidecar'), ids('main'), ids('other')]).toEqual([['w0'], ['w0'], ['w1'], ['w2']]);
  });
});
