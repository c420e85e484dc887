/**
 * The user namespaces of pods that set `hostUsers: false` (upstream pkg/kubelet/userns): each
 * such pod gets a range of `idsPerPod` host IDs of its own out of the kubelet's range
 * (kubelet-mappings.ts), its container IDs from 0 mapped onto it, for users and groups alike. The
 * range is kept in the pod's directory as upstream's `<root-dir>/pods/<uid>/userns` file, so a
 * restarted kubelet (or a Go kubelet taking the node over) finds every range in use and gives the
 * pod the same one again; it is released when the pod's directory goes.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { writeFileAtomicSync } from '../../lib/fs-util.js';
import { join } from 'node:path';
import type * as cri from '../../cri/types.js';
import type { Logger } from '../../lib/logger.js';
import type { IdRange } from './kubelet-mappings.js';

/** The unit a pod's range is a multiple of (upstream userNsUnitLength). */
export const USER_NAMESPACE_UNIT = 65536;

/** One mapping of the `userns` file (upstream idMapping). */
export interface IdMapping {
  hostId: number;
  containerId: number;
  length: number;
}

/** The `userns` file's content (upstream userNamespace). */
export interface PodUserNamespace {
  uidMappings: IdMapping[];
  gidMappings: IdMapping[];
}

/** The file in a pod's directory that holds its mappings (upstream mappingsFile). */
const MAPPINGS_FILE = 'userns';
const MAX_FILE_BYTES = 64 * 1024;

/** The mappings as upstream's json.Marshal writes them. */
export const encodeUserNamespace = (u: PodUserNamespace): string =>
  JSON.stringify({
    uidMappings: u.uidMappings.map(({ hostId, containerId, length }) => ({ hostId, containerId, length })),
    gidMappings: u.gidMappings.map(({ hostId, containerId, length }) => ({ hostId, containerId, length })),
  });

const sameMapping = (a: IdMapping, b: IdMapping) =>
  a.hostId === b.hostId && a.containerId === b.containerId && a.length === b.length;

/** A `userns` file's mappings, checked as upstream's parseUserNsFileAndRecord checks them (its messages). */
export function decodeUserNamespace(text: string): PodUserNamespace {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`invalid user namespace mappings file: ${(err as Error).message}`, { cause: err });
  }
  const list = (v: unknown): IdMapping[] =>
    Array.isArray(v)
      ? v.map((m: Record<string, unknown>) => ({
          hostId: Number(m?.hostId ?? 0),
          containerId: Number(m?.containerId ?? 0),
          length: Number(m?.length ?? 0),
        }))
      : [];
  const o = (parsed ?? {}) as Record<string, unknown>;
  const u = { uidMappings: list(o.uidMappings), gidMappings: list(o.gidMappings) };
  if (u.uidMappings.length !== 1)
    throw new Error('invalid user namespace configuration: no more than one mapping allowed.');
  if (u.uidMappings.length !== u.gidMappings.length)
    throw new Error('invalid user namespace configuration: GID and UID mappings should be identical.');
  if (!sameMapping(u.uidMappings[0], u.gidMappings[0]))
    throw new Error('invalid user namespace configuration: GID and UID mapping should be identical');
  if (u.uidMappings[0].containerId !== 0) throw new Error('invalid user namespace configuration: UID 0 must be mapped');
  return u;
}

/** The CRI options of a pod's own user namespace. */
export const podUserNamespaceOptions = (u: PodUserNamespace): cri.UserNamespace => ({
  mode: 'POD',
  uids: u.uidMappings.map((m) => ({ host_id: m.hostId, container_id: m.containerId, length: m.length })),
  gids: u.gidMappings.map((m) => ({ host_id: m.hostId, container_id: m.containerId, length: m.length })),
});

export class UserNamespaceManager {
  /** Index of each pod range in use (0: the kubelet range's first) → its pod. */
  private readonly used = new Map<number, string>();
  /** Pod UID → the first host ID of its range. */
  private readonly usedBy = new Map<string, number>();
  private readonly offset: number;
  private readonly slots: number;

  /** Checks the kubelet's range against `idsPerPod` and `maxPods` (upstream MakeUserNsManager's messages). */
  constructor(
    private readonly o: {
      podsDir: string;
      idsPerPod: number;
      kubeletRange: IdRange;
      maxPods: number;
      logger?: Logger;
    },
  ) {
    const { idsPerPod, kubeletRange } = o;
    if (idsPerPod % USER_NAMESPACE_UNIT !== 0)
      throw new Error(`kubelet user namespace length ${idsPerPod} is not a multiple of ${USER_NAMESPACE_UNIT}`);
    if (kubeletRange.firstId % idsPerPod !== 0)
      throw new Error(`kubelet user assigned ID ${kubeletRange.firstId} is not a multiple of ${idsPerPod}`);
    // Mapping the host's ID 0 would undo the isolation.
    if (kubeletRange.firstId < idsPerPod)
      throw new Error(`kubelet user assigned ID ${kubeletRange.firstId} must be greater or equal to ${idsPerPod}`);
    if (kubeletRange.length % idsPerPod !== 0)
      throw new Error(`kubelet user assigned IDs length ${kubeletRange.length} is not a multiple of ${idsPerPod}`);
    if (kubeletRange.length / idsPerPod < o.maxPods)
      throw new Error(`kubelet user assigned IDs are not enough to support ${o.maxPods} pods`);
    this.offset = kubeletRange.firstId / idsPerPod;
    this.slots = kubeletRange.length / idsPerPod;
  }

  private podDir(uid: string): string {
    return join(this.o.podsDir, uid);
  }

  /** The pod directories on disk (upstream listPodsFromDisk). */
  private podsOnDisk(): string[] {
    try {
      return readdirSync(this.o.podsDir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  private readFile(uid: string): string | undefined {
    try {
      const text = readFileSync(join(this.podDir(uid), MAPPINGS_FILE), 'utf8');
      if (text.length > MAX_FILE_BYTES) throw new Error('invalid user namespace mappings file: too large');
      return text;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /**
   * Records the ranges of the pods already on disk (a restart); throws upstream's message for a
   * file that does not fit.
   */
  start(): void {
    for (const uid of this.podsOnDisk()) {
      try {
        const text = this.readFile(uid);
        if (text) this.record(uid, decodeUserNamespace(text).uidMappings[0]);
      } catch (err) {
        throw new Error(`record pod mappings for existing pod "${uid}": ${(err as Error).message}`, { cause: err });
      }
    }
  }

  /** Marks `mapping`'s range as the pod's (upstream record), after checking it is one of ours and free. */
  private record(uid: string, mapping: IdMapping): void {
    const { idsPerPod } = this.o;
    if (mapping.length !== idsPerPod) throw new Error(`wrong user namespace length ${mapping.length}`);
    if (mapping.hostId % idsPerPod !== 0) throw new Error(`wrong user namespace offset specified ${mapping.hostId}`);
    const previous = this.usedBy.get(uid);
    if (previous !== undefined && previous !== mapping.hostId)
      throw new Error(`different user namespace range already used by pod "${uid}"`);
    const index = mapping.hostId / idsPerPod - this.offset;
    if (index < 0 || index >= this.slots) throw new Error(`id ${mapping.hostId} is out of range`);
    if (previous === undefined && this.used.has(index)) throw new Error(`range picked for pod "${uid}" already taken`);
    this.used.set(index, uid);
    this.usedBy.set(uid, mapping.hostId);
  }

  /** The first free range (upstream's AllocateNext on its bitmap). */
  private allocate(uid: string): number {
    for (let index = 0; index < this.slots; index++) {
      if (this.used.has(index)) continue;
      const hostId = (index + this.offset) * this.o.idsPerPod;
      this.used.set(index, uid);
      this.usedBy.set(uid, hostId);
      return hostId;
    }
    throw new Error('could not find an empty slot to allocate a user namespace');
  }

  /** Writes the pod's file atomically and durably (upstream writeMappingsToFile: a file store, then the dir synced). */
  private writeFile(uid: string, u: PodUserNamespace): void {
    writeFileAtomicSync(join(this.podDir(uid), MAPPINGS_FILE), encodeUserNamespace(u), 0o600, { durable: true });
  }

  /**
   * The pod's user namespace (upstream GetOrCreateUserNamespaceMappings once `hostUsers: false` is
   * allowed): its file's, else a new range written to its file. The pod directory must exist.
   */
  mappingsFor(podUid: string): PodUserNamespace {
    const text = this.readFile(podUid);
    if (text) {
      const u = decodeUserNamespace(text);
      try {
        this.record(podUid, u.uidMappings[0]);
      } catch (err) {
        throw new Error(`user namespace: ${(err as Error).message}`, { cause: err });
      }
      return u;
    }
    let hostId: number;
    try {
      hostId = this.allocate(podUid);
    } catch (err) {
      throw new Error(`create user namespace: ${(err as Error).message}`, { cause: err });
    }
    const mapping = { hostId, containerId: 0, length: this.o.idsPerPod };
    const u = { uidMappings: [mapping], gidMappings: [{ ...mapping }] };
    try {
      this.writeFile(podUid, u);
    } catch (err) {
      this.release(podUid);
      throw new Error(`create user namespace: ${(err as Error).message}`, { cause: err });
    }
    this.o.logger?.debug({ podUID: podUid, hostId }, 'new pod user namespace allocation');
    return u;
  }

  /** Gives the pod's range back and removes its file (upstream releaseWithLock). */
  release(podUid: string): void {
    const hostId = this.usedBy.get(podUid);
    if (hostId === undefined) return;
    this.usedBy.delete(podUid);
    this.used.delete(hostId / this.o.idsPerPod - this.offset);
    rmSync(join(this.podDir(podUid), MAPPINGS_FILE), { force: true });
  }

  /**
   * Upstream CleanupOrphanedPodUsernsAllocations: the ranges of pod directories no known pod
   * (`known`: the kubelet's pods and those the runtime still runs) has, and of pods whose directory
   * is gone, are released.
   */
  cleanupOrphans(known: (podUid: string) => boolean): void {
    const onDisk = this.podsOnDisk();
    for (const uid of onDisk) if (!known(uid)) this.release(uid);
    const found = new Set(onDisk);
    for (const uid of [...this.usedBy.keys()]) if (!found.has(uid)) this.release(uid);
  }

  /** The pods holding a range, for tests and metrics. */
  allocations(): ReadonlyMap<string, number> {
    return this.usedBy;
  }
}
