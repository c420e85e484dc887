/**
 * The allocation checkpoints in upstream's files (pkg/kubelet/allocation/state): the resources the
 * kubelet allocated to each pod's containers (`allocated_pods_state`) and those it last applied
 * through the runtime (`actuated_pods_state`), so that a kubelet restart — of tskubelet or of a
 * Go kubelet on the same node — carries on an in-place resize where it was. The file is
 * `{"data":"<entries JSON>","checksum":<FNV-32a of go-spew's print of the data string>}`, checked
 * as upstream's checkpoint manager checks it. Pure but for reading and writing the file.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../lib/fs-util.js';
import { fnv32a } from '../../lib/fnv32a.js';

/** A container's resources as the API writes them (quantities as strings). */
export interface ContainerResources {
  limits?: Record<string, string>;
  requests?: Record<string, string>;
}

/** Pod UID → container name → resources, the pod-level ones under POD_LEVEL. */
export type PodAllocations = Map<string, Map<string, ContainerResources>>;

/**
 * The key of the pod-level resources (`spec.resources`) in a pod's allocation, written as
 * upstream's `PodLevelResources`. They share the containers' map so that every comparison,
 * admission and write covers them; no container can take the key (its name is a DNS label, never
 * empty).
 */
export const POD_LEVEL = '';

/** Upstream's checkpoint file names under the root dir. */
export const ALLOCATED_FILE = 'allocated_pods_state';
export const ACTUATED_FILE = 'actuated_pods_state';

const sortedRecord = <T>(entries: [string, T][]): Record<string, T> =>
  Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Go's JSON of a ResourceRequirements: limits before requests, map keys sorted, empty ones left out. */
function resourcesJson(r: ContainerResources): ContainerResources {
  const out: ContainerResources = {};
  if (r.limits && Object.keys(r.limits).length) out.limits = sortedRecord(Object.entries(r.limits));
  if (r.requests && Object.keys(r.requests).length) out.requests = sortedRecord(Object.entries(r.requests));
  return out;
}

/** The checkpoint file's text for `pods`. Pure. */
export function encodeAllocations(pods: PodAllocations): string {
  const entries = sortedRecord(
    [...pods].map(([uid, containers]) => {
      const podLevel = containers.get(POD_LEVEL);
      return [
        uid,
        {
          ContainerResources: sortedRecord(
            [...containers].filter(([name]) => name !== POD_LEVEL).map(([name, r]) => [name, resourcesJson(r)]),
          ),
          PodLevelResources: podLevel ? resourcesJson(podLevel) : null,
        },
      ];
    }),
  );
  const data = JSON.stringify({ entries });
  return JSON.stringify({ data, checksum: fnv32a(Buffer.from(`(string)${data}`, 'utf8')) });
}

/** The allocations in a checkpoint file's text; an error for a corrupt one (its checksum does not match). Pure. */
export function decodeAllocations(text: string): PodAllocations {
  const file = JSON.parse(text) as { data?: string; checksum?: number };
  if (typeof file.data !== 'string') throw new Error('checkpoint has no data');
  if (file.checksum !== fnv32a(Buffer.from(`(string)${file.data}`, 'utf8')))
    throw new Error('checkpoint is corrupted: checksum mismatch');
  const parsed = JSON.parse(file.data) as {
    entries?: Record<
      string,
      { ContainerResources?: Record<string, ContainerResources>; PodLevelResources?: ContainerResources | null }
    >;
  };
  const pods: PodAllocations = new Map();
  for (const [uid, entry] of Object.entries(parsed.entries ?? {})) {
    const containers = new Map(Object.entries(entry.ContainerResources ?? {}));
    if (entry.PodLevelResources) containers.set(POD_LEVEL, entry.PodLevelResources);
    pods.set(uid, containers);
  }
  return pods;
}

/** Reads a checkpoint; none (or a corrupt one, as upstream starts empty then) is no allocations. */
export async function readAllocations(rootDir: string, file: string): Promise<PodAllocations> {
  try {
    return decodeAllocations(await readFile(join(rootDir, file), 'utf8'));
  } catch {
    return new Map();
  }
}

/** Writes a checkpoint atomically, mode 0600 as upstream's. */
export async function writeAllocations(rootDir: string, file: string, pods: PodAllocations): Promise<void> {
  await writeFileAtomic(join(rootDir, file), encodeAllocations(pods), 0o600);
}
