/**
 * The status manager: the latest generated status of every pod, versioned. Later it also
 * syncs to the apiserver (status subresource); for now it is the local source of truth that
 * /pods serves.
 */
import type { PodStatus } from '../../api/types.js';
import { deepEqual } from '../../lib/deep-equal.js';

/** A pod's status and how many times it changed. */
export interface VersionedStatus { status: PodStatus; version: number }

/** Stores statuses; `set` ignores updates that change nothing. */
export class StatusManager {
  private readonly m = new Map<string, VersionedStatus>();
  private gen = 0;

  /** Records `status`; returns true when it changed. */
  set(uid: string, status: PodStatus): boolean {
    const old = this.m.get(uid);
    if (old && deepEqual(old.status, status)) return false;
    this.m.set(uid, { status, version: (old?.version ?? 0) + 1 });
    this.gen++;
    return true;
  }
  /** The latest status. */
  get(uid: string): PodStatus | undefined { return this.m.get(uid)?.status; }
  /** Forgets a pod. */
  remove(uid: string): void { if (this.m.delete(uid)) this.gen++; }
  /** A number that changes whenever any status changes. */
  get generation(): number { return this.gen; }
}
