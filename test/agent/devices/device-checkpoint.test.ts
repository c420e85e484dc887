/** The device checkpoint's shape (upstream kubelet_internal_checkpoint) and the device choice. */
import { describe, expect, it } from 'vitest';
import { decodeDeviceCheckpoint, encodeDeviceCheckpoint } from '../../../src/agent/devices/device-checkpoint.js';
import { chooseDevices, deviceRequests } from '../../../src/agent/devices/device-allocation.js';
import type { Pod } from '../../../src/api/types.js';

describe('device checkpoint', () => {
  it("writes upstream's shape and reads it back", () => {
    const checkpoint = {
      entries: [
        {
          podUid: 'u1',
          container: 'main',
          resource: 'example.com/widget',
          ids: ['w0'],
          answer: Buffer.from([10, 2, 8, 1]),
        },
      ],
      registered: { 'example.com/widget': ['w0', 'w1'] },
    };
    const text = encodeDeviceCheckpoint(checkpoint);
    const file = JSON.parse(text);
    expect(file.Data).toEqual({
      PodDeviceEntries: [
        {
          PodUID: 'u1',
          ContainerName: 'main',
          ResourceName: 'example.com/widget',
          DeviceIDs: { '-1': ['w0'] },
          AllocResp: 'CgIIAQ==',
        },
      ],
      RegisteredDevices: { 'example.com/widget': ['w0', 'w1'] },
    });
    expect(typeof file.Checksum).toBe('number');
    expect(decodeDeviceCheckpoint(text)).toEqual(checkpoint);
  });
});

describe('device choice', () => {
  const pod = (init: number, main: number, side: number): Pod => ({
    metadata: { name: 'p', uid: 'u' },
    spec: {
      initContainers: init
        ? [{ name: 'init', image: 'x', resources: { limits: { 'example.com/w': String(init) } } }]
        : [],
      containers: [
        { name: 'main', image: 'x', resources: { limits: { 'example.com/w': String(main) } } },
        { name: 'side', image: 'x', resources: { limits: { 'example.com/w': String(side), cpu: '1' } } },
      ],
    },
  });
  const devices = new Map([
    ['d0', 'Healthy' as const],
    ['d1', 'Healthy' as const],
    ['d2', 'Unhealthy' as const],
    ['d3', 'Healthy' as const],
  ]);
  const choose = (p: Pod, held: string[] = []) =>
    chooseDevices(
      deviceRequests(p, new Set(['example.com/w'])),
      () => devices,
      () => new Set(held),
    );

  it('gives each container healthy devices no other pod holds; an init container’s go to the regular containers first', () => {
    const r = choose(pod(1, 1, 1));
    expect(
      'byContainer' in r && Object.fromEntries([...r.byContainer].map(([c, m]) => [c, m.get('example.com/w')])),
    ).toEqual({
      init: ['d0'],
      main: ['d0'],
      side: ['d1'],
    });
    expect(choose(pod(0, 1, 1), ['d0'])).toMatchObject({
      byContainer: new Map([
        ['main', new Map([['example.com/w', ['d1']]])],
        ['side', new Map([['example.com/w', ['d3']]])],
      ]),
    });
  });

  it('names the first resource with too few', () => {
    expect(choose(pod(0, 2, 2))).toEqual({ shortfall: { resource: 'example.com/w', requested: 2, available: 1 } });
  });
});
