/**
 * The status manager: the latest generated status of every pod, versioned. It is the local
 * source of truth that /pods serves; the status syncer (status-sync.ts) writes new versions to
 * the apiserver. Listeners hear of every change (never block in one).
 */
import type { PodStatus } from '../../api/types.js';
import { deepEqual } from '../../lib/deep-equal.js';

/** A pod's status and how many times it changed. */
export interface VersionedStatus {
  status: PodStatus;
  version: number;
}

/** Stores statuses; `set` ignores updates that change nothing. */
export class StatusManager {
  private readonly m = new Map<string, VersionedStatus>();
  private gen = 0;
  private listeners: ((uid: string) => void)[] = [];

  /** Records `status`; returns true when it changed. */
  set(uid: string, status: PodStatus): boolean {
    const old = this.m.get(uid);
    if (old && deepEqual(old.status, status)) return false;
    this.m.set(uid, { status, version: (old?.version ?? 0) + 1 });
    this.gen++;
    for (const l of this.listeners) l(uid);
    return true;
  }
  /** The latest status. */
  get(uid: string): PodStatus | undefined {
    return this.m.get(uid)?.status;
  }
  /** The latest status with its version. */
  versioned(uid: string): VersionedStatus | undefined {
    return this.m.get(uid);
  }
  /** UIDs with a status. */
  uids(): string[] {
    return [...this.m.keys()];
  }
  /** Forgets a pod. */
  remove(uid: string): void {
    if (this.m.delete(uid)) this.gen++;
  }
  /** A number that changes whenever any status changes. */
  get generation(): number {
    return this.gen;
  }
  /** Calls `fn` with the UID after every change. */
  onChange(fn: (uid: string) => void): void {
    this.listeners.push(fn);
  }
}
