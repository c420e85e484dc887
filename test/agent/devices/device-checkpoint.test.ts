/** The device checkpoint's shape (upstream kubelet_internal_checkpoint). */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CHECKPOINT_FILE,
  decodeDeviceCheckpoint,
  encodeDeviceCheckpoint,
  readDeviceCheckpoint,
} from '../../../src/agent/devices/device-checkpoint.js';

/** Two checkpoints Go kubelets wrote on GPU nodes (published with their checksums). */
const GO_KUBELET_CHECKPOINTS = [
  '{"Data":{"PodDeviceEntries":[{"PodUID":"bf52b2cd-b611-4e79-86b1-280b283185c3","ContainerName":"check","ResourceName":"nvidia.com/gpu","DeviceIDs":{"-1":["tegra"]},"AllocResp":"Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh"}],"RegisteredDevices":{"nvidia.com/gpu":["tegra"]}},"Checksum":3660592824}',
  '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"nvidia.com/gpu":["GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"]}},"Checksum":3952659280}',
];

describe('device checkpoint', () => {
  it("reads a Go kubelet's checkpoints and writes them back byte for byte", () => {
    const [withPod, empty] = GO_KUBELET_CHECKPOINTS.map(decodeDeviceCheckpoint);
    expect(withPod).toEqual({
      entries: [
        {
          podUid: 'bf52b2cd-b611-4e79-86b1-280b283185c3',
          container: 'check',
          resource: 'nvidia.com/gpu',
          ids: ['tegra'],
          byNuma: { '-1': ['tegra'] },
          answer: Buffer.from('Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh', 'base64'),
        },
      ],
      registered: { 'nvidia.com/gpu': ['tegra'] },
    });
    expect(empty.entries).toEqual([]);
    expect([withPod, empty].map(encodeDeviceCheckpoint)).toEqual(GO_KUBELET_CHECKPOINTS);
  });

  it('writes map keys sorted, as Go does, and refuses a file whose checksum does not match', () => {
    const text = encodeDeviceCheckpoint({ entries: [], registered: { 'b.io/x': ['1'], 'a.io/y': ['2'] } });
    expect(text).toMatch(
      /^\{"Data":\{"PodDeviceEntries":null,"RegisteredDevices":\{"a\.io\/y":\["2"\],"b\.io\/x":\["1"\]\}\},"Checksum":\d+\}$/,
    );
    expect(decodeDeviceCheckpoint(text).registered).toEqual({ 'a.io/y': ['2'], 'b.io/x': ['1'] });
    expect(() => decodeDeviceCheckpoint(GO_KUBELET_CHECKPOINTS[0].replace('"tegra"]}}', '"tegra","x"]}}'))).toThrow(
      'checkpoint is corrupted',
    );
  });

  it('keeps the device IDs by NUMA node (a device on two nodes under each), numeric keys in order', () => {
    const entry = { podUid: 'u', container: 'c', resource: 'a.io/gpu', ids: ['g0', 'g1'] };
    const byNuma = { '1': ['g1'], '0': ['g0', 'g1'] };
    const text = encodeDeviceCheckpoint({ entries: [{ ...entry, byNuma }], registered: {} });
    expect(text).toContain('"DeviceIDs":{"0":["g0","g1"],"1":["g1"]}');
    expect(decodeDeviceCheckpoint(text).entries).toEqual([{ ...entry, byNuma: { '0': ['g0', 'g1'], '1': ['g1'] } }]);
  });

  it('is read as empty, with the reason, when corrupted (the kubelet continues without it, as upstream)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'device-checkpoint-'));
    try {
      writeFileSync(join(dir, CHECKPOINT_FILE), GO_KUBELET_CHECKPOINTS[0].replace('3660592824', '1'));
      expect(await readDeviceCheckpoint(dir)).toEqual({
        entries: [],
        registered: {},
        unusable: 'checkpoint is corrupted',
      });
      writeFileSync(join(dir, CHECKPOINT_FILE), GO_KUBELET_CHECKPOINTS[0]);
      expect((await readDeviceCheckpoint(dir)).entries).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
