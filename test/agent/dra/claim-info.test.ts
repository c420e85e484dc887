/** The prepared devices of a claim, as the checkpoint keeps them and pod-resources reports them. */
import { describe, expect, it } from 'vitest';
import { dynamicResourceOf, preparedDevices, type ClaimInfo } from '../../../src/agent/dra/claim-info.js';

describe('preparedDevices', () => {
  // DRAConsumableCapacity: one device allocated twice, each time a share of its capacity.
  const results = [
    {
      request: 'a',
      driver: 'net.example.com',
      pool: 'node',
      device: 'nic-0',
      shareID: 'f5a1c3e0-0000-4000-8000-000000000001',
    },
    {
      request: 'b',
      driver: 'net.example.com',
      pool: 'node',
      device: 'nic-0',
      shareID: 'f5a1c3e0-0000-4000-8000-000000000002',
    },
    { request: 'gpu', driver: 'gpu.example.com', pool: 'node', device: 'nic-0' },
  ];

  it("keeps each device's share from the allocation result of its driver, pool, device and request", () => {
    const devices = preparedDevices(
      'net.example.com',
      [
        { request_names: ['b'], pool_name: 'node', device_name: 'nic-0', cdi_device_ids: ['net.example.com/nic=b'] },
        { request_names: ['a'], pool_name: 'node', device_name: 'nic-0' },
      ],
      results,
    );
    expect(devices).toEqual([
      {
        PoolName: 'node',
        DeviceName: 'nic-0',
        ShareID: 'f5a1c3e0-0000-4000-8000-000000000002',
        RequestNames: ['b'],
        CDIDeviceIDs: ['net.example.com/nic=b'],
      },
      {
        PoolName: 'node',
        DeviceName: 'nic-0',
        ShareID: 'f5a1c3e0-0000-4000-8000-000000000001',
        RequestNames: ['a'],
        CDIDeviceIDs: [],
      },
    ]);
    // Upstream's checkpoint field order, and null for a whole device (Go's nil *types.UID).
    expect(Object.keys(devices[0])).toEqual(['PoolName', 'DeviceName', 'ShareID', 'RequestNames', 'CDIDeviceIDs']);
    expect(preparedDevices('gpu.example.com', [{ pool_name: 'node', device_name: 'nic-0' }], results)[0].ShareID).toBe(
      null,
    );
  });

  it('reports the share in pod-resources only for a shared device', () => {
    const info: ClaimInfo = {
      ClaimUID: 'u',
      ClaimName: 'nic',
      Namespace: 'default',
      PodUIDs: {},
      DriverState: {
        'net.example.com': {
          Devices: preparedDevices(
            'net.example.com',
            [{ request_names: ['a'], pool_name: 'node', device_name: 'nic-0' }],
            results,
          ),
        },
        // A checkpoint of a kubelet before DRAConsumableCapacity has no ShareID at all.
        'gpu.example.com': {
          Devices: [{ PoolName: 'node', DeviceName: 'gpu-0', RequestNames: [], CDIDeviceIDs: ['g=0'] }],
        },
      },
    };
    expect(dynamicResourceOf(info)).toEqual({
      claim_name: 'nic',
      claim_namespace: 'default',
      claim_resources: [
        {
          cdi_devices: [],
          driver_name: 'net.example.com',
          pool_name: 'node',
          device_name: 'nic-0',
          share_id: 'f5a1c3e0-0000-4000-8000-000000000001',
        },
        { cdi_devices: [{ name: 'g=0' }], driver_name: 'gpu.example.com', pool_name: 'node', device_name: 'gpu-0' },
      ],
    });
  });
});
