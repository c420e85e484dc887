/**
 * The device manager's checkpoint, `<root-dir>/device-plugins/kubelet_internal_checkpoint`, byte
 * for byte as upstream writes it: each container's devices (`PodDeviceEntries`: pod UID,
 * container, resource, device IDs per NUMA node — `-1`: none —, and the plugin's Allocate answer
 * as the base64 of its protobuf; `null` when there are none, as Go marshals a nil slice) and each
 * resource's devices (`RegisteredDevices`), so a restarted kubelet — or a Go kubelet taking the
 * node over — keeps every pod's devices and answers. The checksum is upstream's: FNV-32a of
 * go-spew's `%#v` of the data (checkpoint.checkpointData), checked against two checkpoints Go
 * kubelets wrote; a file whose checksum does not match is corrupted and, as upstream, ignored
 * (the kubelet starts without it). Pure but for the file I/O.
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
  /** The IDs by the NUMA node they are on (`-1`: none), as upstream keeps them; all under `-1` when absent. */
  byNuma?: Record<string, string[]>;
  /** The plugin's answer (ContainerAllocateResponse protobuf bytes), when it was asked. */
  answer?: Buffer;
}

export interface DeviceCheckpoint {
  entries: DeviceEntry[];
  registered: Record<string, string[]>;
}

/** The file's data as Go holds it after json.Unmarshal (what the checksum hashes). */
interface RawEntry {
  PodUID?: string;
  ContainerName?: string;
  ResourceName?: string;
  DeviceIDs?: Record<string, string[] | null> | null;
  AllocResp?: string | null;
}
interface RawData {
  PodDeviceEntries?: RawEntry[] | null;
  RegisteredDevices?: Record<string, string[] | null> | null;
}

/** go-spew's `%#v` (sorted keys, no types inside slices and maps) of upstream's checkpointData. */
function spewData(d: RawData): string {
  const strings = (xs: readonly string[] | null | undefined) => (xs ? `[${xs.join(' ')}]` : '<nil>');
  const map = <V>(m: Record<string, V> | null | undefined, keys: string[], value: (v: V) => string) =>
    m ? `map[${keys.map((k) => `${k}:${value(m[k])}`).join(' ')}]` : '<nil>';
  const bytes = (b64: string | null | undefined) =>
    b64 === null || b64 === undefined ? '<nil>' : `[${[...Buffer.from(b64, 'base64')].join(' ')}]`;
  const entry = (e: RawEntry) => {
    const numaNodes = Object.keys(e.DeviceIDs ?? {}).sort((x, y) => Number(x) - Number(y));
    return `{PodUID:(string)${e.PodUID ?? ''} ContainerName:(string)${e.ContainerName ?? ''} ResourceName:(string)${e.ResourceName ?? ''} DeviceIDs:(checkpoint.DevicesPerNUMA)${map(e.DeviceIDs, numaNodes, strings)} AllocResp:([]uint8)${bytes(e.AllocResp)}}`;
  };
  const entries = d.PodDeviceEntries ? `[${d.PodDeviceEntries.map(entry).join(' ')}]` : '<nil>';
  const registered = map(d.RegisteredDevices, Object.keys(d.RegisteredDevices ?? {}).sort(), strings);
  return `(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)${entries} RegisteredDevices:(map[string][]string)${registered}}`;
}

const checksumOf = (d: RawData) => fnv32a(Buffer.from(spewData(d), 'utf8'));

/** The file's text, as Go's json.Marshal writes it (map keys sorted). Pure. */
export function encodeDeviceCheckpoint(c: DeviceCheckpoint): string {
  const data: RawData = {
    PodDeviceEntries: c.entries.length
      ? c.entries.map((e) => ({
          PodUID: e.podUid,
          ContainerName: e.container,
          ResourceName: e.resource,
          DeviceIDs: e.byNuma ?? { '-1': e.ids },
          AllocResp: e.answer ? e.answer.toString('base64') : null,
        }))
      : null,
    RegisteredDevices: Object.fromEntries(
      Object.keys(c.registered)
        .sort()
        .map((r) => [r, c.registered[r]]),
    ),
  };
  return JSON.stringify({ Data: data, Checksum: checksumOf(data) });
}

/** The checkpoint in a file's text (a Go kubelet's too); throws on one whose checksum does not match. Pure. */
export function decodeDeviceCheckpoint(text: string): DeviceCheckpoint {
  const file = JSON.parse(text) as { Data?: RawData; Checksum?: number };
  const data = file.Data ?? {};
  if (file.Checksum !== checksumOf(data)) throw new Error('checkpoint is corrupted');
  return {
    entries: (data.PodDeviceEntries ?? []).map((e) => ({
      podUid: e.PodUID ?? '',
      container: e.ContainerName ?? '',
      resource: e.ResourceName ?? '',
      ids: [...new Set(Object.values(e.DeviceIDs ?? {}).flatMap((ids) => ids ?? []))],
      byNuma: Object.fromEntries(Object.entries(e.DeviceIDs ?? {}).map(([node, ids]) => [node, ids ?? []])),
      ...(e.AllocResp ? { answer: Buffer.from(e.AllocResp, 'base64') } : {}),
    })),
    registered: Object.fromEntries(Object.entries(data.RegisteredDevices ?? {}).map(([r, ids]) => [r, ids ?? []])),
  };
}

/**
 * The checkpoint in `dir`; an empty one when there is none or it cannot be used (too large,
 * not JSON, corrupted), with the reason for the log, as upstream continues after it.
 */
export async function readDeviceCheckpoint(
  dir: string,
): Promise<DeviceCheckpoint & { unusable?: string; missing?: boolean }> {
  let text: string;
  try {
    text = await readFile(join(dir, CHECKPOINT_FILE), 'utf8');
  } catch {
    return { entries: [], registered: {}, missing: true };
  }
  try {
    if (text.length > MAX_BYTES) throw new Error('checkpoint is too large');
    return decodeDeviceCheckpoint(text);
  } catch (err) {
    return { entries: [], registered: {}, unusable: (err as Error).message };
  }
}

export async function writeDeviceCheckpoint(dir: string, c: DeviceCheckpoint): Promise<void> {
  await writeFileAtomic(join(dir, CHECKPOINT_FILE), encodeDeviceCheckpoint(c), 0o600);
}
