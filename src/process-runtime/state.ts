/**
 * The process runtime's records of sandboxes and containers, kept in memory and persisted as one
 * JSON file per object under the state dir, so a daemon restart (or the next in-process start)
 * knows what it left behind.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readJsonIfExists, writeFileAtomic } from '../lib/fs-util.js';
import type * as cri from '../cri/types.js';

/** A sandbox record: the pod directory plus the config it was created with. */
export interface SandboxRecord {
  id: string;
  config: cri.PodSandboxConfig;
  state: cri.PodSandboxState;
  createdAtNs: string;
  dir: string;
  ip: string;
  runtimeHandler: string;
}

/** A container record. Times are nanoseconds since the epoch as decimal strings. */
export interface ContainerRecord {
  id: string;
  sandboxId: string;
  config: cri.ContainerConfig;
  imageRef: string;
  logPath: string;
  state: cri.ContainerState;
  createdAtNs: string;
  startedAtNs: string;
  finishedAtNs: string;
  exitCode: number;
  reason: string;
  message: string;
  pid?: number;
  pidStartTime?: number;
  /** The main process has its own mount namespace (root, mounts applied). */
  mountNs?: boolean;
  /** Mount points this runtime created on the host for the container (removed with it). */
  createdMountPoints?: string[];
}

/**
 * Loads, saves and deletes records; all writes are atomic. The writes of one record run one after
 * another in the order they were asked for, so a save that was under way when the record was
 * deleted (a container's exit recorded as it is removed) cannot bring its file back.
 */
export class StateStore {
  private readonly queues = new Map<string, Promise<void>>();

  constructor(readonly dir: string) {}

  private path(kind: 'sandboxes' | 'containers', id: string) {
    return join(this.dir, kind, `${id}.json`);
  }

  /** Runs `op` on `path` after the operations asked for before it (whatever their outcome). */
  private serialized(path: string, op: () => Promise<void>): Promise<void> {
    const next = (this.queues.get(path) ?? Promise.resolve()).then(op, op);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(path, settled);
    void settled.then(() => {
      if (this.queues.get(path) === settled) this.queues.delete(path);
    });
    return next;
  }

  saveSandbox(r: SandboxRecord): Promise<void> {
    const path = this.path('sandboxes', r.id);
    const text = JSON.stringify(r);
    return this.serialized(path, () => writeFileAtomic(path, text));
  }
  saveContainer(r: ContainerRecord): Promise<void> {
    const path = this.path('containers', r.id);
    const text = JSON.stringify(r);
    return this.serialized(path, () => writeFileAtomic(path, text));
  }
  deleteSandbox(id: string): Promise<void> {
    const path = this.path('sandboxes', id);
    return this.serialized(path, () => rm(path, { force: true }));
  }
  deleteContainer(id: string): Promise<void> {
    const path = this.path('containers', id);
    return this.serialized(path, () => rm(path, { force: true }));
  }

  /** Removes the temporary files of atomic writes a crash interrupted. */
  async removeTemporaryFiles(): Promise<void> {
    for (const kind of ['sandboxes', 'containers'] as const) {
      for (const n of await readdir(join(this.dir, kind)).catch(() => [] as string[]))
        if (n.includes('.tmp-')) await rm(join(this.dir, kind, n), { force: true });
    }
  }

  /** Every persisted record (unreadable files are skipped). */
  async loadAll(): Promise<{ sandboxes: SandboxRecord[]; containers: ContainerRecord[] }> {
    const read = async <T>(kind: 'sandboxes' | 'containers'): Promise<T[]> => {
      let names: string[] = [];
      try {
        names = await readdir(join(this.dir, kind));
      } catch {
        return [];
      }
      const out: T[] = [];
      for (const n of names.filter((x) => x.endsWith('.json'))) {
        try {
          const r = await readJsonIfExists<T>(join(this.dir, kind, n));
          if (r) out.push(r);
        } catch {
          /* a torn file from a crash is ignored */
        }
      }
      return out;
    };
    return { sandboxes: await read<SandboxRecord>('sandboxes'), containers: await read<ContainerRecord>('containers') };
  }
}
