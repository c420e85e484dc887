/**
 * Housekeeping (upstream HandlePodCleanups), every pass in this order:
 * - workers of removed pods that finished terminating, and of pods created again with the same UID,
 *   are forgotten (`syncKnownPods`), and so are the statuses of pods with neither a pod nor a worker;
 * - each active pod without a worker starts anew (created again with the same UID while it
 *   terminated: a static pod's manifest removed and put back), counted in kubelet_restarted_pods_total;
 * - orphaned mirror pods are deleted (kept while their static pod stops its containers, as upstream);
 * - runtime pods that no source wants and no worker owns (left by an earlier run, or removed while
 *   the kubelet was down) are killed with upstream SyncTerminatingRuntimePod's grace period and
 *   removed; one whose kill fails is left for the next pass;
 * - backoff entries are garbage-collected;
 * - the volumes and directories of pods that are neither wanted, nor owned by a worker, nor in the
 *   runtime (orphaned pod directories, also those left before a restart) are removed, and their
 *   user namespace ranges released.
 */
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { PodManager } from '../pods/pod-manager.js';
import type { RuntimeManager } from '../runtime/runtime-manager.js';
import { podLogDir } from '../runtime/sandbox-config.js';
import { killFailure, killPod } from '../runtime/kill-pod.js';
import type { BackoffTable } from './backoff.js';
import type { PodWorkers } from './pod-workers.js';
import { removePodFromRuntime } from '../runtime/remove-pod.js';
import { podRef, type EventSink } from '../events/recorder.js';

/** What housekeeping needs. */
export interface HousekeepingDeps {
  podManager: PodManager;
  workers: PodWorkers;
  runtime: RuntimeService;
  runtimeManager: RuntimeManager;
  backoff: BackoffTable;
  clock: Clock;
  logger: Logger;
  podLogsDir: string;
  containerLogsDir?: string;
  statusManager?: { uids(): string[]; remove(uid: string): void };
  mirrors?: { deleteOrphans(keep: (fullName: string) => boolean): Promise<void> };
  volumes?: { cleanupOrphans(isKnown: (uid: string) => boolean): Promise<void> };
  /** The pods' user namespace ranges (userns/). */
  userNamespaces?: { cleanupOrphans(isKnown: (uid: string) => boolean): void };
  /** A pod found in the runtime that no worker knows (kubelet_orphaned_runtime_pods_total). */
  onOrphanedRuntimePod?(): void;
  /**
   * The pods admitted to run (upstream's active pods): in the pod manager, neither rejected nor finished in the API.
   */
  activePods?(): Pod[];
  /** An active pod started anew (kubelet_restarted_pods_total). */
  onRestartedPod?(pod: Pod): void;
  /** Where a runtime pod's failed stop is reported (FailedKillPod), as upstream's SyncTerminatingRuntimePod does. */
  events?: EventSink;
}

/** How old the runtime's lists may be for housekeeping: the PLEG lists every second. */
export const RECENT_LISTS_MS = 1500;

/**
 * The grace period of a pod no source wants any more (upstream's: everything else about it is lost), which the
 * minimum grace period makes 2 s, as upstream's killContainer does.
 */
const ORPHAN_GRACE_SECONDS = 1;

/** One housekeeping pass. */
export async function housekeeping(d: HousekeepingDeps): Promise<void> {
  d.workers.syncKnownPods((uid) => !!d.podManager.getPodByUid(uid));
  for (const uid of d.statusManager?.uids() ?? [])
    if (!d.podManager.getPodByUid(uid) && d.workers.stateOf(uid) === undefined) d.statusManager!.remove(uid);
  // A pod admitted to run that no worker has (its UID reused while it terminated) starts anew.
  for (const pod of d.activePods?.() ?? []) {
    if (d.workers.stateOf(pod.metadata.uid!) !== undefined) continue;
    d.logger.info(
      { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, uid: pod.metadata.uid },
      'Pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)',
    );
    d.workers.update({ pod, kind: 'create' });
    d.onRestartedPod?.(pod);
  }
  // Mirror pods without a static pod go; one stays while its static pod stops, as upstream.
  await d.mirrors?.deleteOrphans((fullName) => d.workers.isStaticPodTerminating(fullName));
  // Runtime pods that nothing wants and no worker owns are stopped and removed.
  const known = new Set(d.workers.uids());
  // The PLEG's lists of the last second serve (upstream's runtime cache is as old as that).
  const runtimePods = await d.runtimeManager.listRuntimePods(RECENT_LISTS_MS);
  for (const rp of runtimePods) {
    if (d.podManager.getPodByUid(rp.uid) || known.has(rp.uid)) continue;
    d.logger.info(
      { pod: `${rp.namespace}/${rp.name}`, uid: rp.uid },
      'cleaning up runtime pod that is no longer desired',
    );
    d.onOrphanedRuntimePod?.();
    const status = await d.runtimeManager.getPodStatus(rp.uid, rp.name, rp.namespace);
    const pod = { metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid }, spec: { containers: [] } };
    const failure = killFailure(await killPod(d.runtime, pod, { status, graceOverride: ORPHAN_GRACE_SECONDS }));
    if (failure) {
      d.events?.record(podRef(pod), 'Warning', 'FailedKillPod', `error killing pod: ${failure}`);
      d.logger.warn({ pod: `${rp.namespace}/${rp.name}`, uid: rp.uid, err: failure }, 'error killing pod');
      continue;
    }
    await removePodFromRuntime(d.runtime, status, {
      podLogDir: podLogDir(d.podLogsDir, pod),
      containerLogsDir: d.containerLogsDir,
    });
  }
  d.backoff.gc(d.clock.now());
  // What is left on disk of pods that are nowhere any more: volumes, pod directories, user namespace ranges.
  const inRuntime = new Set(runtimePods.map((p) => p.uid));
  const isKnown = (uid: string) => !!d.podManager.getPodByUid(uid) || known.has(uid) || inRuntime.has(uid);
  await d.volumes?.cleanupOrphans(isKnown);
  try {
    d.userNamespaces?.cleanupOrphans(isKnown);
  } catch (err) {
    d.logger.warn({ err: (err as Error).message }, 'Failed to clean up orphaned pod user namespace allocations');
  }
}
