/**
 * Upstream's runonce mode (`--runonce`, `runOnce: true`; pkg/kubelet/runonce.go): the kubelet
 * runs the pods of the first update its sources give, waits until every container of each is
 * running, and exits: 0 when all started, 1 naming the pods that did not. It serves no port and
 * registers no Node; the pods keep running on a runtime that outlives the kubelet.
 *
 * Upstream syncs each pod itself and gives up at the first sync that fails. Here the agent's own
 * sync loop runs the pods, and a failed sync shows where upstream's reason cache puts it: a
 * container waiting with an error reason (ErrImagePull, CrashLoopBackOff, CreateContainerError, …),
 * which ends a pod's wait at once. Whether the containers run is looked at when upstream looks: 1 s
 * after the pods came, then 2, 4, … 512 s later, when it gives up (1,023 s in all). A container that
 * crashes at once is thus not taken for started in the moment it ran. And as upstream reads the runtime's status of
 * the pod when it looks (GetPodStatus), a pod the kubelet's status shows running counts as started only if the
 * runtime says so then too: that status can be a relist behind a container that has already exited.
 */
import type { Pod, PodStatus } from '../api/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { PodUpdate } from './podconfig/types.js';
import { formatPod } from './runtime/container-config.js';
import { latestContainer, type PodRuntimeStatus } from './runtime/pod-runtime-status.js';

/** How long upstream waits for the sources' first update (runOnceManifestDelay). */
export const RUN_ONCE_MANIFEST_DELAY_MS = 1000;

/** Upstream's first wait between a pod's syncs, doubled after each (runOnceRetryDelay, runOnceRetryDelayBackoff). */
export const RUN_ONCE_RETRY_DELAY_MS = 1000;

/** How many times upstream waits before it gives up on a pod whose containers do not run (runOnceMaxRetries). */
export const RUN_ONCE_MAX_RETRIES = 10;

/** Waiting reasons of a container on its way to running; any other is a failed sync. */
const STARTING_REASONS = new Set(['ContainerCreating', 'PodInitializing']);

/** Where a pod of a runonce run stands. */
export type RunOnceVerdict =
  | { kind: 'pending' }
  | { kind: 'running' }
  /** Terminal (rejected at admission, or it ran to its end): upstream counts it as done, without error. */
  | { kind: 'finished' }
  /** A sync failed: the containers that say so. */
  | { kind: 'failed'; containers: string[] };

/** The verdict on `pod` from its latest status (upstream isPodRunning, and the errors its syncPod returns). Pure. */
export function runOnceVerdict(pod: Pod, status: PodStatus | undefined): RunOnceVerdict {
  if (!status) return { kind: 'pending' };
  if (status.phase === 'Succeeded' || status.phase === 'Failed') return { kind: 'finished' };
  const failed = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]
    .filter((c) => {
      const reason = c.state?.waiting?.reason;
      return reason !== undefined && reason !== '' && !STARTING_REASONS.has(reason);
    })
    .map((c) => c.name);
  if (failed.length) return { kind: 'failed', containers: failed };
  const running = pod.spec.containers.every(
    (c) => status.containerStatuses?.find((s) => s.name === c.name)?.state?.running !== undefined,
  );
  return running ? { kind: 'running' } : { kind: 'pending' };
}

/** Whether the runtime runs the newest instance of each of the pod's containers (upstream isPodRunning). Pure. */
export function runningInRuntime(pod: Pod, status: PodRuntimeStatus | undefined): boolean {
  return !!status && pod.spec.containers.every((c) => latestContainer(status, c.name)?.state === 'running');
}

/** The pods of the first update the sources give (upstream takes whichever comes first). */
export function firstPodUpdate(subscribe: (fn: (u: PodUpdate) => void) => void): Promise<Pod[]> {
  return new Promise((resolve) => subscribe((u) => resolve(u.pods)));
}

/** What a runonce run needs. */
export interface RunOnceDeps {
  /** The first update's pods; it must have been subscribed to before the sources started. */
  firstUpdate: Promise<Pod[]>;
  status(uid: string): PodStatus | undefined;
  /** The pod's status read from the runtime now (upstream GetPodStatus). */
  runtimeStatus(pod: Pod): Promise<PodRuntimeStatus>;
  /** Called with a pod's UID whenever its status changes. */
  onStatusChange(fn: (uid: string) => void): void;
  clock: Clock;
  logger: Logger;
}

/** Runs the first update's pods until each is running, finished or failed; throws upstream's error otherwise. */
export async function runOnce(deps: RunOnceDeps): Promise<void> {
  const { clock, logger } = deps;
  const pods = await new Promise<Pod[] | undefined>((resolve) => {
    const cancel = clock.setTimer(() => resolve(undefined), RUN_ONCE_MANIFEST_DELAY_MS);
    void deps.firstUpdate.then((p) => {
      cancel();
      resolve(p);
    });
  });
  if (!pods) throw new Error(`no pod manifest update after ${RUN_ONCE_MANIFEST_DELAY_MS / 1000}s`);
  logger.info({ numPods: pods.length }, 'Processing manifest with pods');
  const verdicts = await new Promise<Map<Pod, RunOnceVerdict>>((resolve) => {
    const settled = new Map<Pod, RunOnceVerdict>();
    let cancelCheck = () => {};
    const finish = () => {
      cancelCheck();
      resolve(settled);
    };
    // A failed sync, or a pod at its end, settles it at once; a running one only when looked at.
    const settle = (pod: Pod, accept: (v: RunOnceVerdict) => boolean) => {
      if (settled.has(pod)) return;
      const verdict = runOnceVerdict(pod, deps.status(pod.metadata.uid!));
      if (!accept(verdict)) return;
      settled.set(pod, verdict);
      if (settled.size === pods.length) finish();
    };
    const ended = (v: RunOnceVerdict) => v.kind === 'failed' || v.kind === 'finished';
    deps.onStatusChange((uid) => {
      for (const pod of pods) if (pod.metadata.uid === uid) settle(pod, ended);
    });
    /** Pods whose status says running, and whose containers the runtime says run now. */
    const confirmedRunning = async (): Promise<Set<Pod>> => {
      const candidates = pods.filter(
        (pod) => !settled.has(pod) && runOnceVerdict(pod, deps.status(pod.metadata.uid!)).kind === 'running',
      );
      const confirmed = await Promise.all(
        candidates.map(async (pod) => runningInRuntime(pod, await deps.runtimeStatus(pod).catch(() => undefined))),
      );
      return new Set(candidates.filter((_, i) => confirmed[i]));
    };
    const look = (retry: number, delayMs: number) => {
      cancelCheck = clock.setTimer(() => {
        void confirmedRunning().then((running) => {
          if (settled.size === pods.length) return;
          for (const pod of pods) settle(pod, (v) => (v.kind === 'running' ? running.has(pod) : v.kind !== 'pending'));
          if (settled.size === pods.length) return;
          if (retry + 1 >= RUN_ONCE_MAX_RETRIES) finish();
          else look(retry + 1, delayMs * 2);
        });
      }, delayMs);
    };
    if (!pods.length) return finish();
    look(0, RUN_ONCE_RETRY_DELAY_MS);
    for (const pod of pods) settle(pod, ended);
  });
  logger.info({ numPods: pods.length }, 'Finished processing pods');
  const failedPods: string[] = [];
  for (const pod of pods) {
    const verdict = verdicts.get(pod);
    const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
    if (verdict?.kind === 'failed') {
      logger.info({ pod: name, containerName: verdict.containers }, 'Unable to start pod because container failed');
      failedPods.push(formatPod(pod));
    } else if (!verdict) {
      logger.info(
        { pod: name },
        `timeout error: pod "${formatPod(pod)}" containers not running after ${RUN_ONCE_MAX_RETRIES} retries`,
      );
      failedPods.push(formatPod(pod));
    } else logger.info({ pod: name }, 'Started pod');
  }
  if (failedPods.length) throw new Error(`error running pods: [${failedPods.join(' ')}]`);
  logger.info({ numPods: pods.length }, 'Pods started');
}
