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
import type { Pod } from '../../../src/api/types.js';
import { createLogger } from '../../../src/lib/logger.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import { registerDevicePluginMetrics } from '../../../src/agent/metrics/device-plugin-metrics.js';
import { startSamplePlugin, type SamplePlugin } from '../../fixtures/sample-device-plugin.js';

const RESOURCE = 'example.com/widget';

function podAsking(uid: string, count: number): Pod {
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      containers: [{ name: 'main', image: 'x', resources: { limits: { [RESOURCE]: String(count) } } }],
    },
  } as Pod;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setUp(options: Partial<Parameters<typeof startSamplePlugin>[0]> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'device-manager-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
  const manager = new DeviceManager({
    dir,
    logger: createLogger({ level: 'fatal' }),
    metrics: registerDevicePluginMetrics(metrics),
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
  return { manager, plugin, metrics };
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
    const first = manager.admit(podAsking('p1', 2));
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBeUndefined();
    expect(plugin.preferenceRequests).toEqual([{ available: ['w0', 'w1', 'w2', 'w3'], size: 2 }]);
    expect(manager.devicesOf('p1', 'main').map((d) => d.ids)).toEqual([['w3', 'w2']]);
    expect(plugin.allocations).toEqual([['w3', 'w2']]);
    // The next pod is offered only what is free.
    expect(await manager.admit(podAsking('p2', 1))).toBeUndefined();
    expect(plugin.preferenceRequests[1]).toEqual({ available: ['w0', 'w1'], size: 1 });
    expect(manager.devicesOf('p2', 'main')[0].ids).toEqual(['w1']);
    // The answers given at admission reach the container without asking again.
    const [devices] = await manager.containerDevices(podAsking('p1', 2), { name: 'main', image: 'x' });
    expect(devices.envs).toEqual({ WIDGET_IDS: 'w3,w2' });
    expect(plugin.allocations).toHaveLength(2);
  });

  it("counts registrations and times each Allocate in upstream's metrics", async () => {
    const { manager, plugin, metrics } = await setUp();
    await manager.admit(podAsking('p1', 1));
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
    expect(manager.admit(podAsking('p1', 5))).toEqual({
      admit: false,
      reason: 'UnexpectedAdmissionError',
      message:
        'Allocate failed due to requested number of devices unavailable for example.com/widget. Requested: 5, Available: 4, which is unexpected',
    });
    expect(plugin.allocations).toEqual([]);
  });

  it("refuses the pod with upstream's reason when Allocate fails, and holds nothing for it", async () => {
    const { manager } = await setUp({ failAllocate: 'widget controller offline' });
    const r = await manager.admit(podAsking('p1', 1));
    expect(r).toMatchObject({ admit: false, reason: 'UnexpectedAdmissionError' });
    expect(r && !r.admit && r.message).toBe(
      'Allocate failed due to rpc error: code = Unknown desc = widget controller offline, which is unexpected',
    );
    expect(manager.devicesOf('p1', 'main')).toEqual([]);
  });

  it('calls PreStartContainer before every start of the container when the plugin asks for it', async () => {
    const { manager, plugin } = await setUp({ preStartRequired: true });
    const pod = podAsking('p1', 1);
    await manager.admit(pod);
    expect(plugin.preStarts).toEqual([]);
    await manager.containerDevices(pod, pod.spec.containers[0]);
    await manager.containerDevices(pod, pod.spec.containers[0]);
    expect(plugin.preStarts).toEqual([['w0'], ['w0']]);
  });
});
