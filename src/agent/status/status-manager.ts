/**
 * The status manager: the latest generated status of every pod, versioned. Later it also
 * syncs to the apiserver (status subresource); for now it is the local source of truth that
 * /pods serves.
 */
import type { PodStatus } from '../../api/types.js';
import { stableJson } from '../podconfig/static-pod.js';

/** A pod's status and how many times it changed. */
export interface VersionedStatus { status: PodStatus; version: number }

/** Stores statuses; `set` ignores updates that change nothing. */
export class StatusManager {
  private readonly m = new Map<string, VersionedStatus>();

  /** Records `status`; returns true when it changed. */
  set(uid: string, status: PodStatus): boolean {
    const old = this.m.get(uid);
    if (old && stableJson(old.status) === stableJson(status)) return false;
    this.m.set(uid, { status, version: (old?.version ?? 0) + 1 });
    return true;
  }
  /** The latest status. */
  get(uid: string): PodStatus | undefined { return this.m.get(uid)?.status; }
  /** Forgets a pod. */
  remove(uid: string): void { this.m.delete(uid); }
}
