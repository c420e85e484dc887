/**
 * The device manager's checkpoint, `<root-dir>/device-plugins/kubelet_internal_checkpoint`, in
 * upstream's JSON shape: each container's devices (`PodDeviceEntries`: pod UID, container,
 * resource, device IDs per NUMA node — `-1`: none —, and the plugin's Allocate answer as the
 * base64 of its protobuf) and each resource's devices (`RegisteredDevices`), so that a restarted
 * kubelet keeps every pod's devices and answers. The checksum is written as upstream computes it
 * (FNV-32a of go-spew's print of the data) but not required on reading: the checkpoint is the
 * node's own file and losing it would take running pods' devices away. Pure but for the file I/O.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../lib/fs-util.js';
import { fnv32a } from '../../lib/fnv32a.js';

export const CHECKPOINT_FILE = 'kubelet_internal_checkpoint';
/** A checkpoint is a few KiB per pod; far larger is not one. */
const MAX_BYTES = 16 << 20;

/** One container's devices of one resource. */
export interface DeviceEntry {
  podUid: string;
  container: string;
  resource: string;
  ids: string[];
  /** The plugin's answer (ContainerAllocateResponse protobuf bytes), when it was asked. */
  answer?: Buffer;
}

export interface DeviceCheckpoint {
  entries: DeviceEntry[];
  registered: Record<string, string[]>;
}

/** go-spew's `%#v` of upstream's checkpoint.Data for `c` (what the checksum hashes). */
function spewData(c: DeviceCheckpoint): string {
  const strings = (xs: readonly string[]) => `[${xs.join(' ')}]`;
  const entries = c.entries
    .map(
      (e) =>
        `(checkpoint.PodDevicesEntry){PodUID:(string)${e.podUid} ContainerName:(string)${e.container} ResourceName:(string)${e.resource} DeviceIDs:(checkpoint.DevicesPerNUMA)map[-1:${strings(e.ids)}] AllocResp:([]uint8)${strings([...(e.answer ?? [])].map(String))}}`,
    )
    .join(' ');
  const registered = Object.keys(c.registered)
    .sort()
    .map((r) => `${r}:${strings(c.registered[r])}`)
    .join(' ');
  return `(checkpoint.Data){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[${entries}] RegisteredDevices:(map[string][]string)map[${registered}]}`;
}

/** The file's text. Pure. */
export function encodeDeviceCheckpoint(c: DeviceCheckpoint): string {
  return JSON.stringify({
    Data: {
      PodDeviceEntries: c.entries.map((e) => ({
        PodUID: e.podUid,
        ContainerName: e.container,
        ResourceName: e.resource,
        DeviceIDs: { '-1': e.ids },
        AllocResp: (e.answer ?? Buffer.alloc(0)).toString('base64'),
      })),
      RegisteredDevices: c.registered,
    },
    Checksum: fnv32a(Buffer.from(spewData(c), 'utf8')),
  });
}

/** The checkpoint in a file's text (a Go kubelet's too). Pure. */
export function decodeDeviceCheckpoint(text: string): DeviceCheckpoint {
  const file = JSON.parse(text) as {
    Data?: {
      PodDeviceEntries?: {
        PodUID: string;
        ContainerName: string;
        ResourceName: string;
        DeviceIDs?: Record<string, string[]>;
        AllocResp?: string;
      }[];
      RegisteredDevices?: Record<string, string[]>;
    };
  };
  return {
    entries: (file.Data?.PodDeviceEntries ?? []).map((e) => ({
      podUid: e.PodUID,
      container: e.ContainerName,
      resource: e.ResourceName,
      ids: [...new Set(Object.values(e.DeviceIDs ?? {}).flat())],
      ...(e.AllocResp ? { answer: Buffer.from(e.AllocResp, 'base64') } : {}),
    })),
    registered: file.Data?.RegisteredDevices ?? {},
  };
}

export async function readDeviceCheckpoint(dir: string): Promise<DeviceCheckpoint> {
  try {
    const text = await readFile(join(dir, CHECKPOINT_FILE), 'utf8');
    if (text.length > MAX_BYTES) return { entries: [], registered: {} };
    return decodeDeviceCheckpoint(text);
  } catch {
    return { entries: [], registered: {} };
  }
}

export async function writeDeviceCheckpoint(dir: string, c: DeviceCheckpoint): Promise<void> {
  await writeFileAtomic(join(dir, CHECKPOINT_FILE), encodeDeviceCheckpoint(c), 0o600);
}
