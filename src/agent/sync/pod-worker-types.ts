/**
 * What the pod workers are asked (WorkUpdate) and what they ask of the composition (PodSyncer:
 * the work of each lifecycle state, pod-sync.ts), apart from the workers themselves.
 */
import type { Pod } from '../../api/types.js';

/** A worker's lifecycle state. */
export type WorkerState = 'sync' | 'terminating' | 'terminated';

/** What a caller asks of a worker. */
export interface WorkUpdate {
  pod: Pod;
  kind: 'create' | 'update' | 'sync' | 'kill';
  gracePeriodSeconds?: number;
}

/** Why a running pod is synced (upstream's SyncPodType): its first update, a changed spec, or a resync. */
export type SyncUpdateType = 'create' | 'update' | 'sync';

/** The per-state work, supplied by the composition (pod-sync.ts). */
export interface PodSyncer {
  /**
   * Runs the pod; returns `terminal` when it is finished for good. Nothing has acted for this pod
   * since `quiet.quietSinceMs` (monotonic ms, performance.now): the end of its worker's previous
   * sync, or for a worker's first sync the time a worker of the same UID was dropped (0 for a
   * UID no worker had: a new pod; see RuntimeManager.getPodStatus).
   */
  syncPod(pod: Pod, quiet: { quietSinceMs: number }, updateType: SyncUpdateType): Promise<{ terminal: boolean }>;
  /** Stops every container of the pod. */
  syncTerminatingPod(pod: Pod, gracePeriodSeconds?: number): Promise<void>;
  /** Releases the pod's remaining resources after it has stopped. */
  syncTerminatedPod(pod: Pod): Promise<void>;
}
