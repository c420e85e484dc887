/**
 * Wiring of the collectors of what pods leave behind: image GC (keeping the sandbox images),
 * container and sandbox GC with pod directories and cgroups, and container log rotation.
 */
import type { Pod } from '../api/types.js';
import type { Clock } from '../lib/clock.js';
import { imageVolumesOf } from './volume/reconcile.js';
import type { Logger } from '../lib/logger.js';
import { ImageGc } from './gc/image-gc.js';
import { GarbageCollector } from './gc/garbage-collector.js';
import { ContainerLogManager } from './runtime/logs/log-rotation.js';
import type { PodCgroupNaming } from './gc/pod-cgroups.js';
import type { RuntimeManager } from './runtime/runtime-manager.js';
import type { VolumeManager } from './volume/volume-manager.js';
import { protectedImages, type ComposedRuntime } from './compose-runtime.js';
import type { AgentConfig } from './agent-config.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import type { PullRecords } from './images/pull-records.js';
import { nodeRef, type EventSink } from './events/recorder.js';

/** The garbage collectors; `startLogRotation` starts the log manager. */
export function composeGc(
  cfg: AgentConfig,
  o: {
    runtime: ComposedRuntime['runtime'];
    runtimeManager: RuntimeManager;
    volumes: VolumeManager;
    cgroupFsRoot: string;
    cgroupNaming: PodCgroupNaming;
    metrics: KubeletMetrics;
    /** The image manager's pull records: the image GC prunes those of images gone. */
    pullRecords?: PullRecords;
    isActive(uid: string): boolean;
    /** Whether the pod's worker has terminated it (the eviction reclaim removes its dead containers). */
    isTerminated(uid: string): boolean;
    /** The pods the kubelet runs (their image volumes' images are in use). */
    pods(): Pod[];
    /** The Node's events (the collections' warnings). */
    events: EventSink;
    clock: Clock;
    logger: Logger;
  },
): { imageGc: ImageGc; gc: GarbageCollector; startLogRotation(signal: AbortSignal): void } {
  const { runtime, clock, logger } = o;
  const node = nodeRef(cfg.nodeName);
  const nodeEvents = (type: 'Warning', reason: string, message: string) => o.events.record(node, type, reason, message);
  const imageGc = new ImageGc({
    runtime: runtime.runtime,
    images: runtime.images,
    clock,
    logger,
    policy: cfg.imageGc,
    protectedImages: protectedImages(runtime),
    imageVolumeImages: () =>
      o.pods().flatMap((pod) => imageVolumesOf(pod).flatMap((v) => (v.image.reference ? [v.image.reference] : []))),
    onRemoved: (reason) => o.metrics.imagesCollected.inc({ reason }),
    afterPass: (remaining, listedAtMs) => o.pullRecords?.pruneUnknown(remaining, listedAtMs) ?? Promise.resolve(),
    nodeEvents,
  });
  const gc = new GarbageCollector({
    runtime: runtime.runtime,
    runtimeManager: o.runtimeManager,
    imageGc,
    clock,
    logger,
    policy: cfg.containerGc,
    podLogsDir: cfg.podLogsDir,
    containerLogsDir: cfg.containerLogsDir,
    rootDir: cfg.rootDir,
    cgroupFsRoot: o.cgroupFsRoot,
    observeCgroup: o.metrics.observeCgroup,
    cgroupNaming: o.cgroupNaming,
    isActive: o.isActive,
    isTerminated: o.isTerminated,
    nodeEvents,
    removePodDir: (uid) => o.volumes.removePodDir(uid),
    orphanSweep: (orphans, failed) => {
      o.metrics.orphanPodCleanedVolumes.set(undefined, orphans);
      o.metrics.orphanPodCleanedVolumesErrors.set(undefined, failed);
    },
  });
  const startLogRotation = (signal: AbortSignal) => {
    const logs = cfg.containerLogs ?? { maxSizeBytes: 10 * 1024 * 1024, maxFiles: 5, monitorIntervalMs: 10_000 };
    new ContainerLogManager({
      runtime: runtime.runtime,
      clock,
      logger,
      maxSizeBytes: logs.maxSizeBytes,
      maxFiles: logs.maxFiles,
      intervalMs: logs.monitorIntervalMs,
      maxWorkers: logs.maxWorkers,
    }).start({ signal });
  };
  return { imageGc, gc, startLogRotation };
}
